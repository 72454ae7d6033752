"""POST /v1/fs/edit: exact and line edits applied together or not at all,
edit_mismatch naming the edit, preconditions, and an edit racing a write."""

import json
import os
import unittest

from lib.agentd_test import error_code
from lib.fs_helpers import url
from lib.scratch_case import ScratchDirTestCase, tag_of


class EditTestCase(ScratchDirTestCase):
    def edit(self, body, headers=None):
        s, h, b = self.daemon.request("POST", "/v1/fs/edit", body, headers=headers)
        return s, h, json.loads(b)


class EditTest(EditTestCase):
    def test_an_edit_answers_the_new_tag_and_a_unified_diff(self):
        p = self.put_file("m.py", b"def f():\n    return 1\n")
        s, h, b = self.edit({"path": p, "edits": [{"old": "return 1", "new": "return 2"}]})
        self.assertEqual(s, 200, b)
        new = b"def f():\n    return 2\n"
        self.assertEqual(self.read("m.py"), new)
        self.assertEqual((b["etag"], h["etag"], b["size"]), (tag_of(new), tag_of(new), len(new)))
        self.assertEqual(b["diff"], "--- a%s\n+++ b%s\n@@ -1,2 +1,2 @@\n def f():\n"
                                    "-    return 1\n+    return 2\n" % (p, p))

    def test_an_old_text_found_twice_is_edit_mismatch_with_its_lines(self):
        p = self.put_file("f", b"x = 1\ny = 2\nx = 1\n")
        s, _, b = self.edit({"path": p, "edits": [{"old": "y = 2", "new": "y = 3"},
                                                  {"old": "x = 1", "new": "x = 0"}]})
        self.assertEqual((s, error_code(b)), (409, "edit_mismatch"), b)
        e = b["error"]
        self.assertEqual((e["edit"], e["found"], e["count"], e["lines"]), (1, 2, 1, [1, 3]))
        # None applied: the first edit, which did fit, is not on disk either.
        self.assertEqual(self.read("f"), b"x = 1\ny = 2\nx = 1\n")
        self.assertEqual(self.leftovers(), [])

    def test_count_asks_for_exactly_that_many(self):
        p = self.put_file("f", b"a a a\n")
        s, _, b = self.edit({"path": p, "edits": [{"old": "a", "new": "b", "count": 3}]})
        self.assertEqual((s, self.read("f")), (200, b"b b b\n"))
        s, _, b = self.edit({"path": p, "edits": [{"old": "b", "new": "c", "count": 2}]})
        self.assertEqual((s, b["error"]["found"]), (409, 3))

    def test_line_edits_replace_lines_of_the_file_as_read(self):
        p = self.put_file("f", b"1\n2\n3\n4\n")
        s, _, b = self.edit({"path": p, "line_edits": [{"start_line": 2, "end_line": 3, "text": "mid"},
                                                       {"start_line": 5, "end_line": 4, "text": "end"}]})
        self.assertEqual((s, self.read("f")), (200, b"1\nmid\n4\nend\n"), b)
        s, _, b = self.edit({"path": p, "line_edits": [{"start_line": 9, "end_line": 9, "text": "x"}]})
        self.assertEqual((s, b["error"]["line_edit"], b["error"]["lines"]), (409, 0, 4))

    def test_mode_owner_and_xattrs_survive_an_edit(self):
        p = self.put_file("f", b"old\n", mode=0o750)
        try:
            os.setxattr(p, "user.agentd", b"kept")
        except OSError:
            self.skipTest("no user xattrs on this file system")
        before = os.stat(p)
        s, _, _ = self.edit({"path": p, "edits": [{"old": "old", "new": "new"}]})
        after = os.stat(p)
        self.assertEqual(s, 200)
        self.assertNotEqual(before.st_ino, after.st_ino)  # replaced, not written in place
        self.assertEqual((after.st_mode & 0o7777, after.st_uid, after.st_gid),
                         (0o750, before.st_uid, before.st_gid))
        self.assertEqual(os.getxattr(p, "user.agentd"), b"kept")

    def test_a_file_over_the_cap_is_refused_with_the_numbers(self):
        p = self.put_file("big", b"x" * ((8 << 20) + 1))
        s, _, b = self.edit({"path": p, "edits": [{"old": "x", "new": "y"}]})
        self.assertEqual((s, error_code(b)), (413, "payload_too_large"))
        self.assertEqual((b["error"]["size"], b["error"]["limit"]), ((8 << 20) + 1, 8 << 20))

    def test_a_malformed_edit_is_invalid_request_naming_the_field(self):
        p = self.put_file("f", b"x\n")
        s, _, b = self.edit({"path": p, "edits": [{"old": "", "new": "y"}]})
        self.assertEqual((s, error_code(b), b["error"]["field"]), (400, "invalid_request", "edits[0].old"))
        s, _, b = self.edit({"path": p})
        self.assertEqual((s, error_code(b)), (400, "invalid_request"))


class EditPreconditionTest(EditTestCase):
    def test_if_match_in_the_body_or_the_header_guards_the_edit(self):
        p = self.put_file("f", b"v1\n")
        stale = tag_of(b"v0\n")
        s, h, b = self.edit({"path": p, "edits": [{"old": "v1", "new": "v2"}], "if_match": stale})
        self.assertEqual((s, error_code(b), b["error"]["etag"], h["etag"]),
                         (412, "precondition_failed", tag_of(b"v1\n"), tag_of(b"v1\n")))
        s, _, b = self.edit({"path": p, "edits": [{"old": "v1", "new": "v2"}]},
                            headers={"If-Match": stale})
        self.assertEqual(s, 412)
        self.assertEqual(self.read("f"), b"v1\n")
        s, _, b = self.edit({"path": p, "edits": [{"old": "v1", "new": "v2"}]},
                            headers={"If-Match": tag_of(b"v1\n")})
        self.assertEqual((s, self.read("f")), (200, b"v2\n"))

    def test_a_write_racing_an_edit_of_the_same_version_loses_with_412(self):
        p = self.put_file("f", b"base\n")
        base = tag_of(b"base\n")
        pending = self.start_put(p, b"whole new file\n", {"If-Match": base})
        s, _, b = self.edit({"path": p, "edits": [{"old": "base", "new": "edited"}], "if_match": base})
        self.assertEqual(s, 200, b)
        s, _, b = self.finish_put(pending, b"whole new file\n")
        self.assertEqual((s, error_code(b), b["error"]["etag"]), (412, "precondition_failed", tag_of(b"edited\n")))
        self.assertEqual((self.read("f"), self.leftovers()), (b"edited\n", []))

    def test_an_edit_holding_a_tag_a_write_replaced_loses_with_412(self):
        p = self.put_file("f", b"base\n")
        base = tag_of(b"base\n")
        s, _, _ = self.daemon.request("PUT", url("/v1/fs/file", path=p), b"written\n",
                                      headers={"If-Match": base})
        self.assertEqual(s, 200)
        s, _, b = self.edit({"path": p, "edits": [{"old": "base", "new": "edited"}], "if_match": base})
        self.assertEqual((s, b["error"]["etag"]), (412, tag_of(b"written\n")))
        self.assertEqual((self.read("f"), self.leftovers()), (b"written\n", []))


if __name__ == "__main__":
    unittest.main()
