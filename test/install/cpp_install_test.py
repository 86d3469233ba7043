#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Builds programs the way a user outside the project does, against a
`meson install --destdir` tree alone, and runs them.

  cpp_install_test.py --build-dir BUILD --meson MESON --prefix PREFIX
                      --cxx "CXX..." --cc "CC..." [--sanitize b_sanitize]

1. `meson install --destdir` of the build tree into a temporary root.
2. The installed zbrokers-cpp.pc and zbrokers.pc are copied with their
   `prefix=` rewritten to the temporary root (what they would say had the
   tree been configured with that prefix); pkg-config reads only those two
   and the system's own .pc files (libzmq, cppzmq, abseil).
3. Every installed C++ header is compiled, all in one translation unit,
   with nothing but `pkg-config --cflags zbrokers-cpp`: a public header
   that includes one that was not installed fails here.  No test, daemon or
   benchmark header may be installed.
4. external_app.cc (consensus broker, two workers, a blocking client; a
   Majordomo broker, worker and client) is built with
   `pkg-config --cflags --libs zbrokers-cpp`, and external_app.c (a
   consensus round trip through zb.h) with `pkg-config --cflags --libs
   zbrokers`; both must load the libraries of the temporary root (checked
   with ldd) and exit 0.

In a sanitizer build the installed libraries are instrumented, so the
programs are built with the same -fsanitize flags, as a user of such a
build would.  Every step has a timeout.
"""

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))


def sh(argv, what, env=None, cwd=None, timeout=300):
    try:
        r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} did not finish in {timeout} s: "
                           f"{' '.join(argv)}")
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): "
                           f"{' '.join(argv)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def clean_env():
    """No variable that could point a compiler, linker or loader at the
    build or source tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH",
                        "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH",
                        "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR",
                        "PKG_CONFIG_SYSROOT_DIR", "LD_PRELOAD")}
    return env


def find_one(root, pattern):
    found = glob.glob(os.path.join(root, pattern), recursive=True)
    if not found:
        raise RuntimeError(f"meson install did not install {pattern}")
    return found[0]


def relocated_pc(pc_file, prefix, new_prefix, out_dir):
    """Copies a meson-generated .pc file with prefix= pointing at
    new_prefix; every other path in it must be relative to ${prefix}."""
    with open(pc_file) as f:
        lines = f.read().splitlines()
    want = f"prefix={prefix}"
    if want not in lines:
        raise RuntimeError(f"{pc_file} does not say {want}:\n"
                           + "\n".join(lines))
    out = []
    for line in lines:
        if line == want:
            out.append(f"prefix={new_prefix}")
        elif prefix in line and prefix != "/":
            raise RuntimeError(f"{pc_file}: an absolute path that does not "
                               f"go through ${{prefix}}: {line}")
        else:
            out.append(line)
    path = os.path.join(out_dir, os.path.basename(pc_file))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def check_loads_from(program, library, root, env):
    """ldd: `library` resolves to a file under `root`."""
    out = sh(["ldd", program], f"ldd {program}", env=env, timeout=60)
    for line in out.splitlines():
        if line.strip().startswith(library):
            target = line.split("=>")[-1].split("(")[0].strip()
            if not os.path.realpath(target).startswith(
                    os.path.realpath(root) + os.sep):
                raise RuntimeError(f"{program} loads {library} from "
                                   f"{target}, not from {root}")
            return
    raise RuntimeError(f"{program} does not link {library}:\n{out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--meson", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--sanitize", default="none")
    args = ap.parse_args()
    cxx = shlex.split(args.cxx)
    cc = shlex.split(args.cc)
    sanitize = ([] if args.sanitize in ("", "none")
                else [f"-fsanitize={args.sanitize}"])

    with tempfile.TemporaryDirectory(prefix="zb_cpp_install_test_") as tmp:
        try:
            dest = os.path.join(tmp, "dest")
            sh([args.meson, "install", "-C", args.build_dir, "--no-rebuild",
                "--quiet", "--destdir", dest], "meson install --destdir",
               env=clean_env())
            root = dest + args.prefix  # the installed prefix
            pc_dir = os.path.join(tmp, "pkgconfig")
            os.mkdir(pc_dir)
            for name in ("zbrokers-cpp.pc", "zbrokers.pc"):
                relocated_pc(find_one(root, f"**/pkgconfig/{name}"),
                             args.prefix, root, pc_dir)
            env = clean_env()
            env["PKG_CONFIG_PATH"] = pc_dir

            def pkg(*what):
                return shlex.split(sh(["pkg-config", *what], "pkg-config",
                                      env=env, timeout=60))

            cflags = pkg("--cflags", "zbrokers-cpp")
            libs = pkg("--libs", "zbrokers-cpp")
            for flag in cflags + libs:
                for tree in (SOURCE_ROOT, os.path.realpath(args.build_dir)):
                    if tree in flag:
                        raise RuntimeError(f"pkg-config names {tree}: {flag}")
            libdir = pkg("--variable=libdir", "zbrokers-cpp")[0]
            print("zbrokers-cpp:", " ".join(cflags + libs))

            # 3. Every installed header, from the installed tree alone.
            # Included as a program includes them: "zbrokers/consensus/...".
            incroot = os.path.join(root, "include")
            incdir = os.path.join(incroot, "zbrokers")
            headers = sorted(
                os.path.relpath(h, incroot)
                for h in glob.glob(os.path.join(incdir, "**", "*.h"),
                                   recursive=True))
            cpp_headers = [h for h in headers if h != "zbrokers/zb.h"]
            if not cpp_headers:
                raise RuntimeError(f"no C++ headers under {incdir}: "
                                   f"{headers}")
            private = [h for h in cpp_headers
                       if "_test" in h or "/daemon/" in h or "bench" in h
                       or "fuzz" in h or "/test/" in h
                       or "/brokers/" in h or "log_text" in h]
            if private:
                raise RuntimeError(f"private headers installed: {private}")
            all_headers = os.path.join(tmp, "all_headers.cc")
            with open(all_headers, "w") as f:
                f.writelines(f'#include "{h}"\n' for h in cpp_headers)
            sh(cxx + ["-std=c++20", "-fsyntax-only", "-Wall", "-Wextra",
                      "-Werror", *cflags, all_headers],
               "compiling every installed header", env=env, cwd=tmp)
            print(f"{len(cpp_headers)} installed C++ headers compile")

            # 4. The C++ program.
            app = os.path.join(tmp, "external_app")
            sh(cxx + ["-std=c++20", "-Wall", "-Wextra", "-Werror", *sanitize,
                      *cflags, os.path.join(HERE, "external_app.cc"),
                      "-o", app, *libs, f"-Wl,-rpath,{libdir}"],
               "building external_app.cc", env=env, cwd=tmp, timeout=600)
            check_loads_from(app, "libzbrokers-cpp.so", root, env)
            print(sh([app], "external_app", env=env, cwd=tmp,
                     timeout=120).strip())

            # The C program.
            c_cflags = pkg("--cflags", "zbrokers")
            c_libs = pkg("--libs", "zbrokers")
            c_libdir = pkg("--variable=libdir", "zbrokers")[0]
            c_app = os.path.join(tmp, "external_app_c")
            sh(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror", *sanitize,
                     *c_cflags, os.path.join(HERE, "external_app.c"),
                     "-o", c_app, *c_libs, f"-Wl,-rpath,{c_libdir}"],
               "building external_app.c", env=env, cwd=tmp)
            check_loads_from(c_app, "libzbrokers.so", root, env)
            print(sh([c_app], "external_app_c", env=env, cwd=tmp,
                     timeout=120).strip())
        except RuntimeError as e:
            print(f"FAIL: {e}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
