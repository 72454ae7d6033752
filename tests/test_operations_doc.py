"""docs/OPERATIONS.md lists every flag of `agentd --help` with its default,
word for word (scripts/flag-table), so the two cannot drift apart."""

import os
import re
import subprocess
import unittest

from lib.agentd_test import AGENTD_BIN

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAG_TABLE = os.path.join(ROOT, "scripts", "flag-table")
DOC = os.path.join(ROOT, "docs", "OPERATIONS.md")


class OperationsDocTest(unittest.TestCase):
    def test_the_flag_table_matches_agentd_help(self):
        r = subprocess.run([FLAG_TABLE, "--check", AGENTD_BIN], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_every_flag_in_help_has_a_row_with_a_default(self):
        help_text = subprocess.run([AGENTD_BIN, "--help"], capture_output=True, text=True,
                                   check=True).stdout
        flags = re.findall(r"^  (--[a-z0-9-]+)", help_text, re.M)
        self.assertGreater(len(flags), 20)
        with open(DOC) as f:
            doc = f.read()
        for flag in flags:
            row = re.search(r"^\| `%s[ `][^\n]*\| ([^|]+) \|" % re.escape(flag), doc, re.M)
            self.assertIsNotNone(row, flag + " has no row in docs/OPERATIONS.md")
            self.assertTrue(row.group(1).strip(), flag + " has no default")

    def test_the_check_fails_when_the_table_is_stale(self):
        with open(DOC) as f:
            doc = f.read()
        stale = doc.replace("| `--ack-ttl-sec N` | `60` |", "| `--ack-ttl-sec N` | `30` |")
        self.assertNotEqual(stale, doc)
        from importlib.machinery import SourceFileLoader
        table = SourceFileLoader("flag_table", FLAG_TABLE).load_module()
        help_text = subprocess.run([AGENTD_BIN, "--help"], capture_output=True, text=True,
                                   check=True).stdout
        block = table.table(help_text)
        self.assertEqual(table.replace_block(doc, block), doc)
        self.assertNotEqual(table.replace_block(stale, block), stale)


if __name__ == "__main__":
    unittest.main()
