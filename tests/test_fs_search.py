"""GET /v1/fs/search on a real daemon: NDJSON matches then a summary, the
filters (glob, exclude, hidden, gitignore), the bounds (each named when
hit), binary and invalid UTF-8 text, and confinement under --fs-root."""

import json
import os
import shutil
import tempfile
import unittest
import urllib.parse

from lib.agentd_test import Daemon, DaemonTestCase, error_code


def search_url(route="/v1/fs/search", **params):
    """Query with repeatable parameters: pass a list for glob/exclude."""
    pairs = []
    for k, v in params.items():
        for one in (v if isinstance(v, list) else [v]):
            pairs.append((k, str(one)))
    return route + "?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)


class SearchCase(DaemonTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-search-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, rel, data):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return p

    def search(self, daemon=None, **params):
        """(matches, summary); asserts the NDJSON shape."""
        params.setdefault("path", self.dir)
        status, headers, body = (daemon or self.daemon).request("GET", search_url(**params))
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["content-type"], "application/x-ndjson")
        lines = body.decode().split("\n")
        self.assertEqual(lines[-1], "")  # every line ends in a newline
        objs = [json.loads(line) for line in lines[:-1]]
        self.assertEqual(objs[-1]["type"], "summary")
        for o in objs[:-1]:
            self.assertEqual(o["type"], "match")
        return objs[:-1], objs[-1]

    def paths(self, matches):
        return [os.path.relpath(m["path"], self.dir) for m in matches]


class SearchAnswerTest(SearchCase):
    def test_matches_name_line_column_and_text_then_a_summary(self):
        self.write("a.txt", "one\ntwo needle\nthree\n")
        self.write("sub/b.txt", "needle first\n")
        matches, summary = self.search(pattern="needle")
        self.assertEqual(matches, [
            {"type": "match", "path": os.path.join(self.dir, "a.txt"), "line": 2, "column": 5,
             "text": "two needle", "cut": False},
            {"type": "match", "path": os.path.join(self.dir, "sub/b.txt"), "line": 1, "column": 1,
             "text": "needle first", "cut": False},
        ])
        self.assertEqual(summary["files_scanned"], 2)
        self.assertEqual(summary["matches"], 2)
        self.assertEqual(summary["truncated"], False)
        self.assertIsNone(summary["bound"])
        self.assertEqual(summary["binary_skipped"], 0)
        self.assertIsInstance(summary["elapsed_ms"], int)

    def test_the_line_is_usable_as_start_line_of_a_ranged_read(self):
        self.write("f", "".join("line %d\n" % i for i in range(1, 100)))
        matches, _ = self.search(pattern="^line 57$")
        m = matches[0]
        status, _, body = self.daemon.request(
            "GET", search_url("/v1/fs/file", path=m["path"], start_line=m["line"],
                              end_line=m["line"]))
        self.assertEqual((status, body), (200, b"line 57\n"))

    def test_regex_fixed_and_ignore_case(self):
        self.write("f", "a.c\nabc\nABC\n")
        self.assertEqual([m["text"] for m in self.search(pattern="a.c")[0]], ["a.c", "abc"])
        self.assertEqual([m["text"] for m in self.search(pattern="a.c", fixed=1)[0]], ["a.c"])
        self.assertEqual([m["text"] for m in self.search(pattern="abc", ignore_case=1)[0]],
                         ["abc", "ABC"])

    def test_context_lines_before_and_after(self):
        self.write("f", "1\n2\n3\nhit\n5\n6\n7\n")
        matches, _ = self.search(pattern="hit", context=2)
        self.assertEqual((matches[0]["before"], matches[0]["after"]), (["2", "3"], ["5", "6"]))

    def test_a_single_file_can_be_searched(self):
        p = self.write("f.txt", "x\nhit\n")
        matches, summary = self.search(path=p, pattern="hit")
        self.assertEqual([(m["path"], m["line"]) for m in matches], [(p, 2)])
        self.assertEqual(summary["files_scanned"], 1)

    def test_binary_files_are_skipped_and_counted(self):
        self.write("bin", b"needle\x00\x01\x02")
        self.write("text", "needle\n")
        matches, summary = self.search(pattern="needle")
        self.assertEqual(self.paths(matches), ["text"])
        self.assertEqual((summary["binary_skipped"], summary["files_scanned"]), (1, 1))

    def test_invalid_utf8_is_replaced_and_its_offsets_given(self):
        self.write("f", b"bad \xff\xfe byte needle\n")
        matches, _ = self.search(pattern="needle")
        self.assertEqual(matches[0]["text"], "bad \ufffd\ufffd byte needle")
        self.assertEqual(matches[0]["invalid_utf8"], [4, 5])

    def test_long_lines_are_cut_and_say_so(self):
        self.write("f", "needle" + "x" * 5000 + "\n")
        matches, _ = self.search(pattern="needle", max_bytes_per_line=100)
        self.assertEqual((len(matches[0]["text"]), matches[0]["cut"]), (100, True))


class SearchFilterTest(SearchCase):
    def test_glob_includes_and_exclude_prunes(self):
        for rel in ("a.c", "a.h", "a.py", "vendor/v.c", "src/x.c"):
            self.write(rel, "needle\n")
        m, _ = self.search(pattern="needle", glob=["*.c", "*.h"])
        self.assertEqual(self.paths(m), ["a.c", "a.h", "src/x.c", "vendor/v.c"])
        m, _ = self.search(pattern="needle", glob="*.c", exclude="vendor")
        self.assertEqual(self.paths(m), ["a.c", "src/x.c"])
        m, _ = self.search(pattern="needle", glob="src/*.c")
        self.assertEqual(self.paths(m), ["src/x.c"])

    def test_hidden_names_are_skipped_unless_asked(self):
        self.write(".env", "needle\n")
        self.write(".config/x", "needle\n")
        self.write("shown", "needle\n")
        self.assertEqual(self.paths(self.search(pattern="needle")[0]), ["shown"])
        self.assertEqual(self.paths(self.search(pattern="needle", hidden=1)[0]),
                         [".config/x", ".env", "shown"])

    def test_gitignore_with_negation_and_directory_rules(self):
        self.write(".gitignore", "*.log\n!keep.log\nbuild/\n")
        for rel in ("a.log", "keep.log", "build/out.txt", "src/build", "main.c"):
            self.write(rel, "needle\n")
        m, _ = self.search(pattern="needle")
        self.assertEqual(self.paths(m), ["keep.log", "main.c", "src/build"])
        m, _ = self.search(pattern="needle", gitignore=0)
        self.assertEqual(self.paths(m),
                         ["a.log", "build/out.txt", "keep.log", "main.c", "src/build"])

    def test_ignore_files_and_git_info_exclude_below_a_repository(self):
        self.write(".git/HEAD", "ref: refs/heads/main\n")
        self.write(".git/info/exclude", "secret*\n")
        self.write(".gitignore", "/pkg/gen/\n")
        self.write("pkg/.ignore", "*.tmp\n")
        for rel in ("pkg/gen/x.c", "pkg/a.tmp", "pkg/secret.c", "pkg/ok.c"):
            self.write(rel, "needle\n")
        # Searching below the top still honours the top's rules.
        m, _ = self.search(path=os.path.join(self.dir, "pkg"), pattern="needle")
        self.assertEqual(self.paths(m), ["pkg/ok.c"])
        # .git itself is never searched, even with hidden=1.
        m, _ = self.search(pattern="ref", hidden=1)
        self.assertEqual(m, [])


class SearchBoundTest(SearchCase):
    def test_max_results_is_named_when_hit(self):
        self.write("f", "hit\n" * 10)
        m, s = self.search(pattern="hit", max_results=3)
        self.assertEqual((len(m), s["matches"], s["truncated"], s["bound"]), (3, 3, True, "results"))
        m, s = self.search(pattern="hit", max_results=10)
        self.assertEqual((len(m), s["truncated"], s["bound"]), (10, False, None))

    def test_max_bytes_bounds_the_answer(self):
        self.write("f", ("hit " + "y" * 100 + "\n") * 100)
        m, s = self.search(pattern="hit", max_bytes=1000)
        self.assertEqual((s["truncated"], s["bound"]), (True, "bytes"))
        self.assertLessEqual(sum(len(json.dumps(x)) + 1 for x in m), 1100)
        self.assertGreater(len(m), 0)

    def test_the_time_bound_is_named_when_hit(self):
        # 64 MiB cannot be read in a millisecond: the bound is met for sure.
        self.write("big", ("x" * 1023 + "\n") * 65536)
        _, s = self.search(pattern="never-there", timeout_ms=1)
        self.assertEqual((s["truncated"], s["bound"]), (True, "time"))

    def test_bad_parameters_are_refused_naming_them(self):
        for params, field in (({"pattern": "x", "colour": "1"}, "colour"),
                              ({"pattern": "a(b"}, "pattern"),
                              ({}, "pattern"),
                              ({"pattern": "x", "max_results": "0"}, "max_results"),
                              ({"pattern": "x", "context": "-1"}, "context"),
                              ({"pattern": "x", "hidden": "yes"}, "hidden")):
            status, _, body = self.daemon.request("GET", search_url(path=self.dir, **params))
            doc = json.loads(body)
            self.assertEqual((status, error_code(doc), doc["error"].get("field")),
                             (400, "invalid_request", field), params)

    def test_a_start_that_is_neither_file_nor_directory_is_refused(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        status, _, body = self.daemon.request("GET", search_url(path=fifo, pattern="x"))
        self.assertEqual((status, error_code(json.loads(body))), (400, "not_a_directory"))

    def test_a_missing_path_is_not_found(self):
        status, _, body = self.daemon.request(
            "GET", search_url(path=os.path.join(self.dir, "nope"), pattern="x"))
        self.assertEqual((status, error_code(json.loads(body))), (404, "not_found"))


class SearchConfinementTest(unittest.TestCase):
    """Under --fs-root: no escape through a symlinked directory or "..",
    with or without follow=1."""

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="agentd-search-root-")
        cls.root = os.path.join(cls.base, "root")
        cls.outside = os.path.join(cls.base, "outside")
        os.makedirs(os.path.join(cls.root, "real"))
        os.makedirs(cls.outside)
        with open(os.path.join(cls.outside, "secret.txt"), "w") as f:
            f.write("needle outside\n")
        with open(os.path.join(cls.root, "real", "in.txt"), "w") as f:
            f.write("needle inside\n")
        os.symlink(cls.outside, os.path.join(cls.root, "escape"))
        os.symlink("../outside", os.path.join(cls.root, "escape_rel"))
        os.symlink("real", os.path.join(cls.root, "alias"))
        cls.daemon = Daemon("--fs-root", cls.root)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.close()
        shutil.rmtree(cls.base, ignore_errors=True)

    def texts(self, **params):
        status, _, body = self.daemon.request("GET", search_url(**params))
        self.assertEqual(status, 200, body)
        objs = [json.loads(line) for line in body.decode().splitlines()]
        return sorted((o["path"], o["text"]) for o in objs if o["type"] == "match")

    def test_symlinked_directories_do_not_lead_out(self):
        inside = (self.root + "/real/in.txt", "needle inside")
        self.assertEqual(self.texts(path=self.root, pattern="needle"), [inside])
        followed = self.texts(path=self.root, pattern="needle", follow=1)
        self.assertEqual(followed, [(self.root + "/alias/in.txt", "needle inside"), inside])

    def test_a_start_path_through_a_symlink_or_dotdot_out_is_refused(self):
        for path in (self.root + "/escape", self.root + "/escape_rel", self.root + "/../outside"):
            status, _, body = self.daemon.request("GET", search_url(path=path, pattern="needle"))
            self.assertEqual((status, error_code(json.loads(body))), (400, "unsafe_path"), path)


if __name__ == "__main__":
    unittest.main()
