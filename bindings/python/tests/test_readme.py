"""The Python snippet of bindings/python/README.md runs as written (from the repository
root, as the README's commands do) and prints what its comments say."""
import contextlib
import io
import os
import re
import unittest

from . import support


class ReadmeTest(unittest.TestCase):
    def test_snippet_runs(self):
        support.library()
        readme = (support.PACKAGE_ROOT / "README.md").read_text()
        snippet = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
        out = io.StringIO()
        cwd = os.getcwd()
        os.chdir(str(support.REPO))
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(snippet, "README.md", "exec"), {"__name__": "readme"})
        finally:
            os.chdir(cwd)
        text = out.getvalue()
        self.assertIn("loading 100%", text)
        self.assertIn("cpu [1, 585, 447]", text)
        self.assertRegex(text, r" CANCELLED\n")
        self.assertIn("IO INLAY_ERR_IO INLAY_ERR_IO: cannot open", text)


if __name__ == "__main__":
    unittest.main()
