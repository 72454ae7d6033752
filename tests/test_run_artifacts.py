"""POST /v1/run and context runs: artifacts (docs/PROTOCOL.md, "Run code",
"artifacts"): the files a run makes under its artifacts_dir, by path, media
type sniffed from the content, size and SHA-256, never the bytes; bounded,
and confined below the run's cwd."""

import hashlib
import os
import shutil
import tempfile
import unittest

from lib.agentd_test import Daemon, error_code

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64))


class RunArtifactsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="agentd-artifacts-")
        cls.daemon = Daemon("--workdir", cls.work)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        self.cwd = tempfile.mkdtemp(dir=self.work)

    def run_code(self, body, status=200):
        got, obj = self.daemon.json("POST", "/v1/run", dict(body, cwd=self.cwd), timeout=120)
        self.assertEqual(got, status, obj)
        return obj

    def test_files_made_under_the_dir_are_described_by_content_not_name(self):
        os.makedirs(os.path.join(self.cwd, "out"))
        with open(os.path.join(self.cwd, "out", "kept.csv"), "w") as f:
            f.write("a,b\n")
        code = ("import os\n"
                "open('out/plot.txt', 'wb').write(%r)\n"
                "os.makedirs('out/tables', exist_ok=True)\n"
                "open('out/tables/t.json', 'w').write('{\"rows\": [1, 2]}\\n')\n"
                "open('elsewhere.txt', 'w').write('not an artifact')\n" % PNG)
        r = self.run_code({"runtime": "python", "code": code, "artifacts_dir": "out"})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["artifacts"], [
            {"path": "out/plot.txt", "media_type": "image/png", "bytes": len(PNG),
             "sha256": hashlib.sha256(PNG).hexdigest()},
            {"path": "out/tables/t.json", "media_type": "application/json", "bytes": 17,
             "sha256": hashlib.sha256(b'{"rows": [1, 2]}\n').hexdigest()},
        ])
        self.assertFalse(r["artifacts_truncated"])
        self.assertIsNone(r["artifacts_bound"])
        # changed_files still lists everything, the file outside the dir too.
        paths = {c["path"] for c in r["changed_files"]}
        self.assertIn("elsewhere.txt", paths)
        self.assertNotIn("stdout", r["artifacts"][0])  # never the content

    def test_a_modified_file_is_an_artifact_and_an_untouched_or_removed_one_is_not(self):
        os.makedirs(os.path.join(self.cwd, "res"))
        for name in ("same.txt", "edit.txt", "gone.txt"):
            with open(os.path.join(self.cwd, "res", name), "w") as f:
                f.write(name)
        r = self.run_code({"runtime": "shell", "artifacts_dir": "res",
                           "code": "echo more >> res/edit.txt; rm res/gone.txt"})
        self.assertEqual([a["path"] for a in r["artifacts"]], ["res/edit.txt"])
        self.assertEqual(r["artifacts"][0]["media_type"], "text/plain; charset=utf-8")

    def test_without_an_artifacts_dir_the_answer_has_no_artifacts_members(self):
        r = self.run_code({"runtime": "shell", "code": "mkdir -p out; echo x > out/a"})
        for member in ("artifacts", "artifacts_truncated", "artifacts_bound"):
            self.assertNotIn(member, r)

    def test_a_dir_the_run_turns_into_a_symlink_describes_nothing_outside(self):
        outside = tempfile.mkdtemp(dir=self.work)
        r = self.run_code({"runtime": "shell", "artifacts_dir": "out",
                           "code": "ln -s %s out; echo secret > out/s.txt" % outside})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["artifacts"], [])
        self.assertTrue(r["artifacts_truncated"])
        self.assertEqual(r["artifacts_bound"], {"name": "artifacts_dir", "value": 0,
                                                "unit": "entries"})

    def test_a_symlink_inside_the_dir_is_not_an_artifact(self):
        r = self.run_code({"runtime": "shell", "artifacts_dir": "out",
                           "code": "mkdir out; ln -s /etc/passwd out/p; echo hi > out/real"})
        self.assertEqual([a["path"] for a in r["artifacts"]], ["out/real"])

    def test_more_files_than_an_answer_holds_are_cut_and_the_bound_named(self):
        r = self.run_code({"runtime": "shell", "artifacts_dir": "many",
                           "code": "mkdir many; for i in $(seq 1000 1104); do : > many/f$i; done"})
        self.assertEqual(len(r["artifacts"]), 100)
        self.assertEqual(r["artifacts"][0]["path"], "many/f1000")
        self.assertTrue(r["artifacts_truncated"])
        self.assertEqual(r["artifacts_bound"], {"name": "artifacts", "value": 100,
                                                "unit": "entries"})

    def test_an_artifacts_dir_that_leaves_the_cwd_is_refused_before_anything_runs(self):
        for bad in ("../x", "/tmp", "a/../../b", ""):
            r = self.run_code({"runtime": "shell", "code": "touch ran-%d" % len(bad),
                               "artifacts_dir": bad}, status=400)
            self.assertEqual(error_code(r), "invalid_request")
            self.assertEqual(r["error"]["field"], "artifacts_dir")
        self.assertEqual(os.listdir(self.cwd), [])


class ContextArtifactsTest(unittest.TestCase):
    def test_each_context_run_reports_what_it_made_and_create_refuses_the_member(self):
        if not shutil.which("python3"):
            self.skipTest("no python3")
        work = tempfile.mkdtemp(prefix="agentd-ctx-artifacts-")
        self.addCleanup(shutil.rmtree, work, True)
        with Daemon("--workdir", work) as d:
            status, body = d.json("POST", "/v1/contexts", {"id": "c1", "runtime": "python",
                                                           "artifacts_dir": "out"})
            self.assertEqual((status, error_code(body)), (400, "invalid_request"), body)
            status, body = d.json("POST", "/v1/contexts", {"id": "c1", "runtime": "python"})
            self.assertEqual(status, 201, body)
            run = {"code": "import os\nos.makedirs('out', exist_ok=True)\n"
                           "open('out/a.txt', 'w').write('one')\n",
                   "artifacts_dir": "out", "run_id": "r1"}
            status, first = d.json("POST", "/v1/contexts/c1/run", run, timeout=120)
            self.assertEqual(status, 200, first)
            self.assertEqual([a["path"] for a in first["artifacts"]], ["out/a.txt"])
            run = {"code": "open('out/b.txt', 'w').write('two')\n", "artifacts_dir": "out",
                   "run_id": "r2"}
            status, second = d.json("POST", "/v1/contexts/c1/run", run, timeout=120)
            self.assertEqual(status, 200, second)
            # Scanned before and after this run: a.txt is the first run's.
            self.assertEqual([a["path"] for a in second["artifacts"]], ["out/b.txt"])
            self.assertEqual(second["artifacts"][0]["sha256"], hashlib.sha256(b"two").hexdigest())


if __name__ == "__main__":
    unittest.main()
