# Copyright 2026 The zbrokers Authors.
"""Build step of the zbrokers package (pyproject.toml has the metadata).

The package is pure Python, but it needs libzbrokers.so.  When a built one
is found at build time -- the file named by ZBROKERS_LIB, else
build*/bindings/c/libzbrokers.so in this source tree (a plain build first,
never a sanitizer build) -- it is copied into the package as
zbrokers/libzbrokers.so.0, so that the installed package is self-contained
(it still links the system's libzmq and abseil).  Without one the package
is pure and finds the library at import time (docs/bindings.md).
"""

import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CARRIED = "libzbrokers.so.0"


def built_library():
    env = os.environ.get("ZBROKERS_LIB")
    if env:
        if not os.path.isfile(env):
            raise SystemExit(f"ZBROKERS_LIB={env}: no such file")
        return env
    found = glob.glob(os.path.join(ROOT, "build*", "bindings", "c",
                                   "libzbrokers.so"))
    found = [p for p in found if "san" not in p.split(os.sep)[-4]]
    found.sort(key=lambda p: (p.split(os.sep)[-4] != "build", p))
    return found[0] if found else None


LIBRARY = built_library()


class BuildPy(build_py):
    def run(self):
        super().run()
        if LIBRARY is not None:
            target = os.path.join(self.build_lib, "zbrokers", CARRIED)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            # The real file, not the symlink chain of a build tree.
            shutil.copyfile(os.path.realpath(LIBRARY), target)
            os.chmod(target, 0o755)
            print(f"zbrokers: carrying {os.path.realpath(LIBRARY)}")
        else:
            print("zbrokers: no built libzbrokers.so found; the package "
                  "will look for the installed one at import time")


class Dist(Distribution):
    def has_ext_modules(self):
        # A carried shared library makes the wheel platform-specific.
        return LIBRARY is not None


setup(cmdclass={"build_py": BuildPy}, distclass=Dist)
