"""GET /v1/fs/glob on a real daemon: each pattern rule of docs/PROTOCOL.md
("Pattern rules"), sorted answers with type, size and mtime, the shared
ignore rules and bounds, and confinement under --fs-root."""

import json
import os
import shutil
import tempfile
import unittest

from lib.agentd_test import Daemon, DaemonTestCase, error_code
from test_fs_search import search_url


class GlobCase(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-glob-")
        for rel in ("a.c", "b.h", "ab.c", "x[1].txt", "star*.txt", "src/m.c", "src/m.h",
                    "src/deep/er/n.c", "test/t.c", "Upper.C", "7up.c"):
            self.write(rel, "content")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, rel, data):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(data)
        return p

    def glob(self, pattern, **params):
        status, body = self.daemon.json("GET", search_url("/v1/fs/glob", path=self.dir,
                                                          pattern=pattern, **params))
        self.assertEqual(status, 200, body)
        return body

    def names(self, pattern, **params):
        return [os.path.relpath(e["path"], self.dir) for e in self.glob(pattern, **params)["entries"]]


class GlobRuleTest(GlobCase):
    def test_star_matches_within_one_component(self):
        self.assertEqual(self.names("*.c"), ["7up.c", "a.c", "ab.c"])
        self.assertEqual(self.names("src/*"), ["src/deep", "src/m.c", "src/m.h"])

    def test_question_mark_matches_one_character(self):
        self.assertEqual(self.names("?.c"), ["a.c"])

    def test_bracket_sets_ranges_negation_and_classes(self):
        self.assertEqual(self.names("[ab].*"), ["a.c", "b.h"])
        self.assertEqual(self.names("[a-b]b.c"), ["ab.c"])
        self.assertEqual(self.names("[!a].c"), [])
        self.assertEqual(self.names("[[:digit:]]*"), ["7up.c"])

    def test_double_star_spans_components(self):
        self.assertEqual(self.names("**/*.c"),
                         ["7up.c", "a.c", "ab.c", "src/deep/er/n.c", "src/m.c", "test/t.c"])
        self.assertEqual(self.names("src/**/n.c"), ["src/deep/er/n.c"])
        self.assertEqual(self.names("src/**"), ["src/deep", "src/deep/er", "src/deep/er/n.c",
                                                "src/m.c", "src/m.h"])

    def test_backslash_escapes_a_special_character(self):
        self.assertEqual(self.names("star\\*.txt"), ["star*.txt"])
        self.assertEqual(self.names("x\\[1\\].txt"), ["x[1].txt"])

    def test_brace_sets_expand(self):
        self.assertEqual(self.names("src/*.{c,h}"), ["src/m.c", "src/m.h"])
        self.assertEqual(self.names("{src,test}/**/*.c"),
                         ["src/deep/er/n.c", "src/m.c", "test/t.c"])

    def test_matching_is_case_sensitive_and_whole_path(self):
        self.assertEqual(self.names("*.C"), ["Upper.C"])
        self.assertEqual(self.names("m.c"), [])


class GlobAnswerTest(GlobCase):
    def test_entries_carry_type_size_and_mtime(self):
        os.utime(os.path.join(self.dir, "a.c"), ns=(1_700_000_000_000_000_000,) * 2)
        body = self.glob("a.c")
        st = os.stat(os.path.join(self.dir, "a.c"))
        self.assertEqual(body["entries"], [{
            "path": os.path.join(self.dir, "a.c"), "type": "file", "size": 7,
            "mode": "%04o" % (st.st_mode & 0o7777), "uid": st.st_uid, "gid": st.st_gid,
            "mtime": "2023-11-14T22:13:20.000Z", "target": None}])
        self.assertEqual((body["truncated"], body["bound"]), (False, None))
        self.assertEqual(self.glob("src")["entries"][0]["type"], "dir")

    def test_max_results_keeps_the_first_in_order(self):
        body = self.glob("**/*.c", max_results=2)
        self.assertEqual([os.path.basename(e["path"]) for e in body["entries"]], ["7up.c", "a.c"])
        self.assertEqual((body["truncated"], body["bound"]), (True, "results"))

    def test_hidden_and_gitignore_apply_as_for_search(self):
        self.write(".hidden.c", "")
        self.write(".gitignore", "ab.c\n!keep\n")
        self.assertEqual(self.names("*.c"), ["7up.c", "a.c"])
        self.assertEqual(self.names("*.c", gitignore=0), ["7up.c", "a.c", "ab.c"])
        self.assertEqual(self.names("*.c", hidden=1), [".hidden.c", "7up.c", "a.c"])
        self.assertEqual(self.names("**/*.c", exclude="src"), ["7up.c", "a.c", "test/t.c"])

    def test_bad_patterns_and_parameters_are_refused(self):
        for params, field in (({"pattern": "/etc/*"}, "pattern"),
                              ({"pattern": ""}, "pattern"),
                              ({"pattern": "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}"},
                               "pattern"),
                              ({"pattern": "*", "max_results": "x"}, "max_results"),
                              ({"pattern": "*", "sort": "1"}, "sort")):
            status, body = self.daemon.json("GET", search_url("/v1/fs/glob", path=self.dir,
                                                              **params))
            self.assertEqual((status, error_code(body), body["error"].get("field")),
                             (400, "invalid_request", field), params)


class GlobConfinementTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="agentd-glob-root-")
        cls.root = os.path.join(cls.base, "root")
        os.makedirs(os.path.join(cls.root, "in"))
        os.makedirs(os.path.join(cls.base, "outside"))
        open(os.path.join(cls.base, "outside", "secret.c"), "w").close()
        open(os.path.join(cls.root, "in", "ok.c"), "w").close()
        os.symlink(os.path.join(cls.base, "outside"), os.path.join(cls.root, "escape"))
        cls.daemon = Daemon("--fs-root", cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.base, ignore_errors=True)

    def test_a_symlinked_directory_out_of_the_root_is_never_entered(self):
        for follow in ("0", "1"):
            status, body = self.daemon.json("GET", search_url(
                "/v1/fs/glob", path=self.root, pattern="**/*.c", follow=follow))
            self.assertEqual(status, 200)
            self.assertEqual([e["path"] for e in body["entries"]], [self.root + "/in/ok.c"])


if __name__ == "__main__":
    unittest.main()
