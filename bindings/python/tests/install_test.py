#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Installs the Python package the two ways a user does, and runs a round
trip (plain call() and from asyncio) from each installation alone.

  install_test.py --lib PATH/libzbrokers.so --build-dir BUILD --meson MESON

1. pip: a fresh venv (/usr/bin/python3 -m venv), then
   `pip install --no-build-isolation --no-index` of a copy of
   bindings/python with ZBROKERS_LIB naming the built library, which the
   package then carries.  The round trip runs with the venv's python in
   isolated mode (-I: no PYTHONPATH, no user site, not the source tree) and
   without ZBROKERS_LIB.
2. meson: `meson install --destdir` of the build tree into a temporary
   root; the package there must find the library from its own prefix.  The
   installed files (program, library, header, pkg-config file, man page,
   systemd unit, example config) are checked too.

Offline: pip must not download anything, so the build backend comes from
Debian's packages (python3-setuptools in the venv's ensurepip wheels, and
python3-wheel-whl for `wheel`, installed into the venv from
/usr/share/python-wheels).  When python3-venv or those wheels are missing
(scripts/setup installs them) the test prints why and is skipped (exit
77) -- except under CI (CI set in the environment), where that is a
failure.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)  # bindings/python
DEBIAN_WHEELS = "/usr/share/python-wheels"

ROUND_TRIP = r'''
import asyncio, os, sys
import zbrokers, zbrokers.aio

expect = sys.argv[1]
for what, path in (("package", zbrokers.__file__),
                   ("library", zbrokers.library_path)):
    if not os.path.realpath(path).startswith(os.path.realpath(expect)):
        sys.exit(f"{what} {path} is not from {expect}")

def setup(reactor):
    broker = zbrokers.ConsensusBroker(reactor, "tcp://127.0.0.1:*")
    zbrokers.ConsensusWorker(reactor, broker.endpoint, b"echo",
                             lambda f: [b"echo:" + f[0]], heartbeat_interval=0.2)
    mdp = zbrokers.MdpBroker(reactor, "tcp://127.0.0.1:*", heartbeat_interval=0.2)
    zbrokers.MdpWorker(reactor, mdp.endpoint, b"echo", lambda f: f,
                       heartbeat_interval=0.2)
    return broker, mdp

# Plain: blocking call() with everything on one reactor.
with zbrokers.Reactor() as reactor:
    broker, mdp = setup(reactor)
    assert reactor.run_until(lambda: broker.worker_count(b"echo") == 1 and
                             mdp.worker_count(b"echo") == 1, 10)
    client = zbrokers.ConsensusClient(reactor, broker.endpoint)
    r = client.call(b"echo", [b"plain"], timeout=5)
    assert r.ok and r.frames == [b"echo:plain"], r
    m = zbrokers.MdpClient(reactor, mdp.endpoint, timeout=5)
    r = m.call(b"echo", [b"plain mdp"])
    assert r.ok and r.frames == [b"plain mdp"], r

# asyncio: the reactor inside the event loop.
async def main():
    reactor = zbrokers.Reactor()
    async with zbrokers.aio.attach(reactor):
        broker, mdp = setup(reactor)
        while not (broker.worker_count(b"echo") and mdp.worker_count(b"echo")):
            await asyncio.sleep(0.01)
        client = zbrokers.ConsensusClient(reactor, broker.endpoint)
        results = await asyncio.gather(*[
            zbrokers.aio.request(client, b"echo", [b"%d" % i])
            for i in range(20)])
        assert [r.frames for r in results] == [[b"echo:%d" % i]
                                               for i in range(20)]
        m = zbrokers.MdpClient(reactor, mdp.endpoint, timeout=5)
        r = await zbrokers.aio.request(m, b"echo", [b"async mdp"])
        assert r.ok and r.frames == [b"async mdp"], r
    reactor.close()

asyncio.run(asyncio.wait_for(main(), 60))
print("round trips ok:", zbrokers.__file__, zbrokers.library_path)
'''


class Skip(Exception):
    pass


def sh(argv, what, env=None, cwd=None, timeout=300):
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): "
                           f"{' '.join(argv)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def clean_env(keep_preload=False):
    """The environment without anything that points at the source tree or a
    library; the ASan preload only for the programs that load the
    (instrumented) library."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ZBROKERS_LIB", "PYTHONPATH", "PYTHONHOME",
                        "LD_LIBRARY_PATH", "VIRTUAL_ENV")}
    if not keep_preload:
        env.pop("LD_PRELOAD", None)
    return env


def pip_in_venv(tmp, lib):
    venv = os.path.join(tmp, "venv")
    r = subprocess.run(["/usr/bin/python3", "-m", "venv", venv],
                       capture_output=True, text=True, timeout=120,
                       env=clean_env())
    if r.returncode != 0:
        raise Skip("cannot make a venv (python3-venv missing? run "
                   f"scripts/setup): {r.stderr.strip()[-300:]}")
    python = os.path.join(venv, "bin", "python")
    have = subprocess.run([python, "-c", "import setuptools, wheel"],
                          capture_output=True, env=clean_env()).returncode == 0
    if not have:
        r = subprocess.run([python, "-m", "pip", "install", "--quiet",
                            "--no-index", "--find-links", DEBIAN_WHEELS,
                            "setuptools", "wheel"],
                           capture_output=True, text=True, timeout=300,
                           env=clean_env())
        if r.returncode != 0:
            raise Skip("the venv has no setuptools/wheel to build with and "
                       f"{DEBIAN_WHEELS} has none (python3-setuptools-whl, "
                       "python3-wheel-whl; run scripts/setup): "
                       f"{r.stderr.strip()[-300:]}")
    # pip builds in the source directory: use a copy, never the tree.
    src = os.path.join(tmp, "src")
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", "tests", "bench"))
    env = clean_env()
    env["ZBROKERS_LIB"] = lib  # what the package carries
    out = sh([python, "-m", "pip", "install", "--no-build-isolation",
              "--no-index", src], "pip install", env=env)
    print(out.strip().splitlines()[-1])
    # The installed package must not need the copy it was built from.
    shutil.rmtree(src)
    out = sh([python, "-I", "-c", ROUND_TRIP, venv], "round trip in the venv",
             env=clean_env(keep_preload=True), cwd=tmp)
    print("pip/venv:", out.strip())


def meson_destdir(tmp, build_dir, meson):
    dest = os.path.join(tmp, "dest")
    sh([meson, "install", "-C", build_dir, "--no-rebuild", "--quiet",
        "--destdir", dest], "meson install --destdir", env=clean_env())

    def one(pattern):
        found = glob.glob(os.path.join(dest, pattern), recursive=True)
        if not found:
            raise RuntimeError(f"meson install did not install {pattern}")
        return found[0]

    for pattern in ("**/bin/zb-broker", "**/bin/zb", "**/libzbrokers.so.0",
                    "**/include/zbrokers/zb.h", "**/pkgconfig/zbrokers.pc",
                    "**/systemd/system/zb-broker.service",
                    "**/share/zbrokers/zb-broker.example.toml",
                    "**/zbrokers/py.typed", "**/zbrokers/aio.py"):
        one(pattern)
    if shutil.which("help2man"):
        one("**/man1/zb-broker.1")
        one("**/man1/zb.1")
    package = os.path.dirname(one("**/zbrokers/__init__.py"))
    site = os.path.dirname(package)
    code = ("import sys; sys.path.insert(0, %r)\n" % site) + ROUND_TRIP
    out = sh(["/usr/bin/python3", "-I", "-c", code, dest],
             "round trip from the meson install", env=clean_env(True), cwd=tmp)
    print("meson install:", out.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--meson", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zb_install_test_") as tmp:
        try:
            meson_destdir(tmp, args.build_dir, args.meson)
            pip_in_venv(tmp, os.path.realpath(args.lib))
        except Skip as e:
            if os.environ.get("CI"):
                print(f"FAIL (CI may not skip): {e}")
                return 1
            print(f"SKIP: {e}")
            return 77
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"FAIL: {e}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
