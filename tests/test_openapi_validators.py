"""docs/openapi.yaml passes two independent OpenAPI 3.1 validators
(tests/openapi-validators: the OpenAPI Initiative's JSON Schema through
@seriousme/openapi-schema-validator, and @apidevtools/swagger-parser), and
both reject a copy with a known defect, so a pass means something.

tests/test_openapi.py checks the file against the daemon; this module
checks that other tools (code generators, documentation sites) can read it.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SPEC = os.path.join(REPO, "docs", "openapi.yaml")
VALIDATORS = os.path.join(HERE, "openapi-validators")
VALIDATOR_NAMES = ("openapi-schema-validator", "swagger-parser")


def run_validators(path):
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node is not on PATH: run scripts/install-deps")
    if not os.path.isdir(os.path.join(VALIDATORS, "node_modules", "@apidevtools")):
        raise AssertionError("the validators are not installed: run scripts/install-deps")
    proc = subprocess.run([node, os.path.join(VALIDATORS, "validate.mjs"), path],
                          capture_output=True, text=True, timeout=300, cwd=VALIDATORS)
    verdicts = {}
    for line in proc.stdout.splitlines():
        name, _, rest = line.partition(" ")
        if name in VALIDATOR_NAMES:
            verdicts[name] = rest
    return proc.returncode, verdicts, proc.stdout + proc.stderr


class OpenApiValidatorsTest(unittest.TestCase):
    def test_both_validators_accept_the_published_file(self):
        rc, verdicts, output = run_validators(SPEC)
        self.assertEqual(rc, 0, output)
        self.assertEqual(sorted(verdicts), sorted(VALIDATOR_NAMES), output)
        for name, verdict in verdicts.items():
            self.assertTrue(verdict.startswith("ok"), "%s: %s" % (name, verdict))

    def test_both_validators_reject_a_response_without_a_description(self):
        # The control: the same file with one defect the specification
        # forbids (a Response Object must have a description).
        with open(SPEC, encoding="utf-8") as f:
            text = f.read()
        marker = "    MethodNotAllowed:\n      description: "
        self.assertIn(marker, text)
        start = text.index(marker) + len("    MethodNotAllowed:\n")
        end = text.index("\n", start) + 1
        broken = text[:start] + text[end:]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "openapi.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(broken)
            rc, verdicts, output = run_validators(path)
        self.assertEqual(rc, 1, output)
        for name in VALIDATOR_NAMES:
            self.assertIn("FAIL", verdicts.get(name, ""), "%s accepted the defect: %s" % (name, output))


if __name__ == "__main__":
    unittest.main()
