# Copyright 2026 The zbrokers Authors.
"""The package as installed: py.typed, type hints on the public API, the
version, and finding the library from the install prefix."""

import inspect
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest

import zbrokers
import zbrokers.aio

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(SOURCE))


def public_callables():
    for module in (zbrokers, zbrokers.aio):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    if isinstance(member, property):
                        member = member.fget
                    if inspect.isfunction(member):
                        yield f"{name}.{attr}", member
            elif inspect.isfunction(obj):
                yield name, obj


class PackageTest(unittest.TestCase):

    def test_py_typed_is_there(self):
        self.assertTrue(os.path.exists(
            os.path.join(os.path.dirname(zbrokers.__file__), "py.typed")))

    def test_public_api_is_annotated(self):
        missing = []
        for name, fn in public_callables():
            sig = inspect.signature(fn)
            if sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{name} -> ?")
            for p in sig.parameters.values():
                if p.name in ("self", "cls"):
                    continue
                if p.annotation is inspect.Parameter.empty:
                    missing.append(f"{name}({p.name})")
        self.assertEqual(missing, [])

    def test_versions_agree(self):
        with open(os.path.join(SOURCE, "pyproject.toml")) as f:
            pyproject = re.search(r'^version = "([^"]+)"', f.read(), re.M)
        with open(os.path.join(ROOT, "meson.build")) as f:
            meson = re.search(r"version : '([^']+)'", f.read())
        self.assertEqual(pyproject.group(1), meson.group(1))
        self.assertEqual(zbrokers.__version__, meson.group(1))

    def test_finds_the_library_from_the_install_prefix(self):
        # The layout `meson install` makes: PREFIX/lib/python3.X/
        # site-packages/zbrokers and PREFIX/lib/<multiarch>/libzbrokers.so.0,
        # with nothing else to go on (no ZBROKERS_LIB, no build tree).
        lib = zbrokers.library_path
        self.assertTrue(os.path.isfile(lib), lib)
        multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
        with tempfile.TemporaryDirectory() as prefix:
            site = os.path.join(prefix, "lib", "python%d.%d" %
                                sys.version_info[:2], "site-packages")
            shutil.copytree(os.path.join(SOURCE, "zbrokers"),
                            os.path.join(site, "zbrokers"),
                            ignore=shutil.ignore_patterns("__pycache__",
                                                          "*.so*"))
            libdir = os.path.join(prefix, "lib", multiarch)
            os.makedirs(libdir)
            shutil.copyfile(os.path.realpath(lib),
                            os.path.join(libdir, "libzbrokers.so.0"))
            env = {k: v for k, v in os.environ.items()
                   if k not in ("ZBROKERS_LIB", "PYTHONPATH")}
            code = ("import sys; sys.path.insert(0, %r); import zbrokers; "
                    "print(zbrokers.library_path)" % site)
            r = subprocess.run([sys.executable, "-c", code], env=env,
                               cwd=prefix, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(),
                             os.path.join(libdir, "libzbrokers.so.0"))


if __name__ == "__main__":
    unittest.main()
