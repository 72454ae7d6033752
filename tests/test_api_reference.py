"""The generated API reference pages (docs/api/python.md and
docs/api/typescript.md) are what scripts/api-reference makes from the
clients' sources today, and name every method of each client."""

import os
import re
import subprocess
import sys
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)

import agentd_client as ac

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ApiReferenceTest(unittest.TestCase):
    def test_the_pages_are_current(self):
        r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "api-reference"),
                            "--check"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_python_method_has_a_section_with_its_signature(self):
        with open(os.path.join(REPO, "docs", "api", "python.md"), encoding="utf-8") as f:
            page = f.read()
        client = page.split("\n## aio.AsyncClient\n")[0]
        names = [n for n in dir(ac.Client) if not n.startswith("_") and callable(getattr(ac.Client, n))]
        self.assertIn("set_token", names)
        for name in names:
            with self.subTest(method=name):
                self.assertRegex(client, r"\n### %s\n\n```python\n%s\(" % (name, name))

    def test_every_typescript_method_of_the_naming_table_has_a_section(self):
        with open(os.path.join(REPO, "docs", "api", "typescript.md"), encoding="utf-8") as f:
            page = f.read()
        with open(os.path.join(REPO, "docs", "CLIENT.md"), encoding="utf-8") as f:
            table = f.read().split("## Naming table")[1].split("\n### ")[0]
        # A cell marked *(to come)* names a method the client does not have yet.
        names = re.findall(r"^\|[^|]*\|[^|]*\|[^|]*\|[^|]*\| `([a-zA-Z]+)`(?! \*\(to come\)\*)",
                           table, re.M)
        self.assertGreater(len(names), 30)
        for name in names:
            with self.subTest(method=name):
                self.assertRegex(page, r"\n## %s\n\n```ts\n%s\(" % (name, name))


if __name__ == "__main__":
    unittest.main()
