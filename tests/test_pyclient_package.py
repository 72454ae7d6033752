"""The Python client as a package: it installs offline with pip (into a
--target directory and into a fresh venv) and works from the installed copy, parses as Python 3.9, and type-checks strictly
against Python 3.9's standard library."""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.pyclient import PYCLIENT_DIR


class PackageTest(unittest.TestCase):
    def test_every_exported_name_is_defined(self):
        # `from agentd_client import *` fails on a name in __all__ that the
        # package does not define (OutputMatch was listed but not imported).
        r = subprocess.run([sys.executable, "-c", "from agentd_client import *"],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=PYCLIENT_DIR))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_pip_installs_it_offline_and_the_installed_copy_works(self):
        tmp = tempfile.mkdtemp(prefix="pyclient-pip-")
        self.addCleanup(shutil.rmtree, tmp, True)
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                            "--disable-pip-version-check", "--target", tmp, PYCLIENT_DIR],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0 and "No module named pip" in r.stderr:
            self.skipTest("this Python has no pip")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(tmp, "agentd_client", "py.typed")))
        with Daemon() as d:
            r = subprocess.run(
                [sys.executable, "-c",
                 "import agentd_client as ac, sys; print(ac.__file__); "
                 "c = ac.Client(sys.argv[1], token='test-token'); "
                 "print(c.run(['echo', 'installed']).stdout.decode().strip())",
                 "http://127.0.0.1:%d" % d.port],
                capture_output=True, text=True, timeout=60, cwd=tmp,
                env=dict(os.environ, PYTHONPATH=tmp))
            self.assertEqual(r.returncode, 0, r.stderr)
            file_line, out_line = r.stdout.splitlines()
            self.assertTrue(file_line.startswith(tmp), file_line)
            self.assertEqual(out_line, "installed")

    def test_a_fresh_venv_installs_it_with_pip_and_the_installed_copy_calls_a_daemon(self):
        # What a harness's project does: a new virtualenv, `pip install
        # ./client/python` (offline: the build backend is in-tree), then
        # an import and a real call, from a directory outside the source.
        tmp = tempfile.mkdtemp(prefix="pyclient-venv-")
        self.addCleanup(shutil.rmtree, tmp, True)
        venv = os.path.join(tmp, "venv")
        r = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0 and ("ensurepip" in r.stderr + r.stdout):
            self.skipTest("this Python cannot make a venv with pip (Debian: python3-venv)")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        python = os.path.join(venv, "bin", "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps",
                            "--disable-pip-version-check", PYCLIENT_DIR],
                           capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with Daemon() as d:
            r = subprocess.run(
                [python, "-c",
                 "import agentd_client as ac, sys; print(ac.__file__); "
                 "c = ac.Client(sys.argv[1], token='test-token'); "
                 "print(c.run(['echo', 'from the venv']).stdout.decode().strip())",
                 "http://127.0.0.1:%d" % d.port],
                capture_output=True, text=True, timeout=60, cwd=tmp, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        file_line, out_line = r.stdout.splitlines()
        self.assertTrue(file_line.startswith(os.path.join(venv, "lib")), file_line)
        self.assertEqual(out_line, "from the venv")

    def test_it_type_checks_strictly_against_python_3_9(self):
        mypy = shutil.which("mypy")
        self.assertIsNotNone(mypy, "mypy is missing: run scripts/install-deps")
        r = subprocess.run([mypy, "--strict", "--python-version", "3.9", "--cache-dir", os.devnull,
                            "agentd_client"], cwd=PYCLIENT_DIR, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_module_parses_as_python_3_9(self):
        pkg = os.path.join(PYCLIENT_DIR, "agentd_client")
        for name in sorted(os.listdir(pkg)):
            if name.endswith(".py"):
                with open(os.path.join(pkg, name)) as f:
                    source = f.read()
                with self.subTest(module=name):
                    ast.parse(source, name, feature_version=(3, 9))
                    self.assertIn("from __future__ import annotations", source)


if __name__ == "__main__":
    unittest.main()
