"""Finding libinlay: an explicit path, INLAY_LIBRARY, the loader's search for the SONAME;
clear errors for a wrong path; the ABI version check."""
import os
import pathlib
import subprocess
import sys
import unittest

import inlay
from inlay import _capi

from . import support


def run_python(code, env):
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=str(support.PACKAGE_ROOT),
                          capture_output=True, text=True, timeout=120)


class LibraryTest(unittest.TestCase):
    def setUp(self):
        self.lib = support.library()

    def test_version_and_abi(self):
        self.assertEqual(self.lib.inlay_abi_version(), _capi.ABI_VERSION)
        self.assertRegex(inlay.library_version(), r"^\d+\.\d+\.\d+")

    def test_explicit_path(self):
        lib = inlay.Library(self.lib.path)
        self.assertEqual(lib.version, self.lib.version)
        # A model can name its library; it then calls that one.
        with inlay.Model(support.MODEL, library=self.lib.path, n_threads=1) as model:
            self.assertIsNot(model.library, self.lib)
            self.assertEqual(model.info.architecture, "llama")

    def test_wrong_paths_raise_clearly(self):
        with self.assertRaises(inlay.LibraryNotFoundError) as e:
            inlay.Library("/nonexistent/libinlay.so")
        self.assertIn("/nonexistent/libinlay.so", str(e.exception))
        # A shared library that is not libinlay names the missing function.
        with self.assertRaises(inlay.LibraryNotFoundError) as e:
            inlay.Library("libc.so.6")
        self.assertIn("inlay_", str(e.exception))

    def env(self, **changes):
        env = dict(os.environ)
        env.pop("INLAY_LIBRARY", None)
        env["PYTHONPATH"] = str(support.PACKAGE_ROOT)
        env.update(changes)
        return env

    def test_environment_variable(self):
        code = "import inlay; print(inlay.default_library().path)"
        out = run_python(code, self.env(INLAY_LIBRARY=self.lib.path))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), self.lib.path)
        out = run_python(code, self.env(INLAY_LIBRARY="/nonexistent/libinlay.so"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("LibraryNotFoundError", out.stderr)
        self.assertIn("/nonexistent/libinlay.so", out.stderr)

    def test_loader_search_for_the_soname(self):
        # What an installed library gives: the loader finds libinlay.so.1 by itself.
        directory = pathlib.Path(self.lib.path).resolve().parent
        support.require((directory / "libinlay.so.1").exists(), "no libinlay.so.1 beside %s" % self.lib.path)
        code = "import inlay; lib = inlay.default_library(); print(lib.path, lib.inlay_abi_version())"
        out = run_python(code, self.env(LD_LIBRARY_PATH=str(directory)))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["libinlay.so.1", "1"])

    def test_not_found_says_how_to_fix(self):
        out = run_python("import inlay; inlay.default_library()", self.env(LD_LIBRARY_PATH="/nonexistent"))
        if out.returncode == 0:
            self.skipTest("a libinlay is installed system-wide")
        self.assertIn("INLAY_LIBRARY", out.stderr)


if __name__ == "__main__":
    unittest.main()
