#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""zbrokers as a meson subproject, the way docs/install.md says to use it.

  subproject_test.py --meson MESON

A new outer project in a temporary directory, with this source tree as
subprojects/zbrokers (a symlink), asks for dependency('zbrokers-cpp') and
dependency('zbrokers') with the subproject as fallback (forced, so that an
installed zbrokers on the machine cannot stand in).  It builds
external_app.cc and external_app.c -- only them and what they need, at
buildtype plain (-O0, no debug info) to keep the compile short -- and runs
both; each must load the library its build made (checked with ldd).
Every step has a timeout.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))

OUTER = """\
project('outer', 'cpp', 'c', default_options : ['cpp_std=c++20'])
opts = ['tests=disabled', 'benchmarks=disabled', 'man=disabled']
zbrokers_cpp = dependency('zbrokers-cpp', fallback : 'zbrokers',
                          default_options : opts)
zbrokers_c = dependency('zbrokers', fallback : 'zbrokers',
                        default_options : opts)
executable('app', 'app.cc', dependencies : zbrokers_cpp)
executable('app_c', 'app.c', dependencies : zbrokers_c)
"""


def sh(argv, what, env, cwd, timeout):
    try:
        r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} did not finish in {timeout} s")
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): "
                           f"{' '.join(argv)}\n{r.stdout[-4000:]}\n"
                           f"{r.stderr[-4000:]}")
    return r.stdout


def check_loads_from(program, library, build, env):
    out = sh(["ldd", program], f"ldd {program}", env, None, 60)
    for line in out.splitlines():
        if line.strip().startswith(library):
            target = line.split("=>")[-1].split("(")[0].strip()
            if not os.path.realpath(target).startswith(
                    os.path.realpath(build) + os.sep):
                raise RuntimeError(f"{program} loads {library} from "
                                   f"{target}, not from {build}")
            return
    raise RuntimeError(f"{program} does not link {library}:\n{out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meson", required=True)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PKG_CONFIG_PATH")}
    with tempfile.TemporaryDirectory(prefix="zb_subproject_test_") as tmp:
        try:
            os.mkdir(os.path.join(tmp, "subprojects"))
            os.symlink(SOURCE_ROOT, os.path.join(tmp, "subprojects",
                                                 "zbrokers"))
            with open(os.path.join(tmp, "meson.build"), "w") as f:
                f.write(OUTER)
            shutil.copy(os.path.join(HERE, "external_app.cc"),
                        os.path.join(tmp, "app.cc"))
            shutil.copy(os.path.join(HERE, "external_app.c"),
                        os.path.join(tmp, "app.c"))
            build = os.path.join(tmp, "b")
            out = sh([args.meson, "setup", build, "--buildtype=plain",
                      "--wrap-mode=nodownload",
                      "--force-fallback-for=zbrokers-cpp,zbrokers"],
                     "meson setup of the outer project", env, tmp, 300)
            for dep in ("zbrokers-cpp", "zbrokers"):
                if f"Dependency {dep} found: YES" not in out:
                    raise RuntimeError(f"{dep} did not come from the "
                                       f"subproject:\n{out[-3000:]}")
            sh(["ninja", "-C", build, "-j2", "app", "app_c"],
               "building the outer project", env, tmp, 1500)
            for program, library in (("app", "libzbrokers-cpp.so"),
                                     ("app_c", "libzbrokers.so")):
                path = os.path.join(build, program)
                check_loads_from(path, library, build, env)
                print(sh([path], program, env, tmp, 120).strip())
        except RuntimeError as e:
            print(f"FAIL: {e}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
