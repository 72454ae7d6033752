"""ETags on file reads and stat; If-Match / If-None-Match on PUT, DELETE and rename."""

import json
import os
import unittest

from lib.agentd_test import error_code
from lib.fs_helpers import url
from lib.scratch_case import ScratchDirTestCase, tag_of


class EtagTestCase(ScratchDirTestCase):
    def put(self, p, data, headers=None):
        s, h, b = self.daemon.request("PUT", url("/v1/fs/file", path=p), data, headers=headers)
        return s, h, json.loads(b)

    def assertPreconditionFailed(self, status, headers, body, current):
        self.assertEqual((status, error_code(body)), (412, "precondition_failed"), body)
        self.assertEqual(body["error"]["etag"], current)
        self.assertTrue(body["error"]["exists"])
        self.assertEqual(headers.get("etag"), current)


class ReadEtagTest(EtagTestCase):
    def test_every_read_and_stat_answer_the_content_hash(self):
        data = b"one\ntwo\nthree\n"
        p = self.put_file("f.txt", data)
        want = tag_of(data)
        s, h, b = self.daemon.request("GET", url("/v1/fs/file", path=p))
        self.assertEqual((s, b, h["etag"]), (200, data, want))
        s, h, b = self.daemon.request("GET", url("/v1/fs/file", path=p, start_line=2, end_line=2))
        self.assertEqual((s, b, h["etag"]), (200, b"two\n", want))
        s, h, b = self.daemon.request("GET", url("/v1/fs/file", path=p), headers={"Range": "bytes=0-2"})
        self.assertEqual((s, b, h["etag"]), (206, b"one", want))
        s, h, _ = self.daemon.request("HEAD", url("/v1/fs/file", path=p))
        self.assertEqual((s, h["etag"]), (200, want))
        s, h, b = self.daemon.request("GET", url("/v1/fs/stat", path=p))
        self.assertEqual((s, json.loads(b)["etag"], h["etag"]), (200, want, want))

    def test_an_empty_file_has_the_tag_of_no_bytes(self):
        p = self.put_file("empty", b"")
        s, h, _ = self.daemon.request("GET", url("/v1/fs/file", path=p))
        self.assertEqual((s, h["etag"]), (200, tag_of(b"")))

    def test_the_tag_follows_the_content_written_in_place(self):
        p = self.put_file("f", b"aaaa")
        _, h1, _ = self.daemon.request("GET", url("/v1/fs/stat", path=p))
        with open(p, "r+b") as f:  # same inode, same size
            f.write(b"bbbb")
        _, h2, _ = self.daemon.request("GET", url("/v1/fs/stat", path=p))
        self.assertEqual((h1["etag"], h2["etag"]), (tag_of(b"aaaa"), tag_of(b"bbbb")))

    def test_directories_and_unfollowed_symlinks_have_no_tag(self):
        os.mkdir(self.path("d"))
        self.put_file("real", b"x")
        os.symlink("real", self.path("link"))
        s, h, b = self.daemon.request("GET", url("/v1/fs/stat", path=self.path("d")))
        self.assertEqual(s, 200)
        self.assertNotIn("etag", json.loads(b))
        self.assertNotIn("etag", h)
        s, _, b = self.daemon.request("GET", url("/v1/fs/stat", path=self.path("link")))
        self.assertNotIn("etag", json.loads(b))
        s, _, b = self.daemon.request("GET", url("/v1/fs/stat", path=self.path("link"), follow=1))
        self.assertEqual(json.loads(b)["etag"], tag_of(b"x"))


class WritePreconditionTest(EtagTestCase):
    def test_a_write_answers_the_new_tag(self):
        p = self.path("new")
        s, h, b = self.put(p, b"fresh")
        self.assertEqual((s, b["etag"], h["etag"]), (200, tag_of(b"fresh"), tag_of(b"fresh")))

    def test_a_write_of_many_blocks_answers_the_tag_of_every_byte_in_order(self):
        # 3 MiB of distinct bytes: a dozen of the daemon's 256 KiB blocks,
        # hashed on a thread beside the writer; with Content-Length and chunked.
        data = os.urandom(3 << 20)
        s, h, b = self.put(self.path("big"), data)
        self.assertEqual((s, b["etag"], h["etag"]), (200, tag_of(data), tag_of(data)))
        conn = self.daemon.connection()
        pieces = [data[i:i + 100_000] for i in range(0, len(data), 100_000)]
        conn.request("PUT", url("/v1/fs/file", path=self.path("big-chunked")), body=iter(pieces),
                     headers=self.daemon.headers(), encode_chunked=True)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        self.assertEqual((resp.status, answer["etag"]), (200, tag_of(data)))
        s, h, _ = self.daemon.request("GET", url("/v1/fs/stat", path=self.path("big-chunked")))
        self.assertEqual(h["etag"], tag_of(data))

    def test_a_write_with_the_current_tag_replaces_the_file(self):
        p = self.put_file("f", b"v1")
        s, _, b = self.put(p, b"v2", {"If-Match": tag_of(b"v1")})
        self.assertEqual((s, b["etag"], self.read("f")), (200, tag_of(b"v2"), b"v2"))

    def test_a_write_with_a_stale_tag_is_refused_and_changes_nothing(self):
        p = self.put_file("f", b"current")
        os.chmod(p, 0o640)
        s, h, b = self.put(p, b"mine", {"If-Match": tag_of(b"what I read")})
        self.assertPreconditionFailed(s, h, b, tag_of(b"current"))
        self.assertEqual(self.read("f"), b"current")
        self.assertEqual(os.stat(p).st_mode & 0o777, 0o640)
        self.assertEqual(self.leftovers(), [])

    def test_if_match_on_a_missing_file_says_it_does_not_exist(self):
        s, h, b = self.put(self.path("missing"), b"x", {"If-Match": "*"})
        self.assertEqual((s, error_code(b), b["error"]["exists"]), (412, "precondition_failed", False))
        self.assertIsNone(b["error"]["etag"])
        self.assertFalse(os.path.exists(self.path("missing")))

    def test_if_none_match_star_creates_but_never_replaces(self):
        p = self.path("once")
        s, _, _ = self.put(p, b"first", {"If-None-Match": "*"})
        self.assertEqual(s, 200)
        s, h, b = self.put(p, b"second", {"If-None-Match": "*"})
        self.assertPreconditionFailed(s, h, b, tag_of(b"first"))
        self.assertEqual((self.read("once"), self.leftovers()), (b"first", []))

    def test_a_malformed_if_match_is_invalid_request(self):
        s, _, b = self.put(self.path("f"), b"x", {"If-Match": '"a"b"'})
        self.assertEqual((s, error_code(b), b["error"]["field"]), (400, "invalid_request", "If-Match"))
        s, _, b = self.put(self.path("f"), b"x", {"If-None-Match": tag_of(b"x")})
        self.assertEqual((s, b["error"]["field"]), (400, "If-None-Match"))

    def test_of_two_writes_holding_the_same_tag_the_second_to_finish_loses(self):
        p = self.put_file("f", b"base")
        base = {"If-Match": tag_of(b"base")}
        first = self.start_put(p, b"from A", base)
        second = self.start_put(p, b"from B", base)
        # Both passed the check made before the body; the one that commits
        # second meets the first one's content at its check before rename.
        s_b, _, _ = self.finish_put(second, b"from B")
        s_a, h_a, b_a = self.finish_put(first, b"from A")
        self.assertEqual(s_b, 200)
        self.assertPreconditionFailed(s_a, h_a, b_a, tag_of(b"from B"))
        self.assertEqual((self.read("f"), self.leftovers()), (b"from B", []))

    def test_a_guarded_write_loses_to_a_change_made_while_its_body_was_sent(self):
        p = self.put_file("f", b"base")
        pending = self.start_put(p, b"late write", {"If-Match": tag_of(b"base")})
        with open(p, "wb") as f:  # a guest process rewrites it in place
            f.write(b"changed meanwhile")
        s, h, b = self.finish_put(pending, b"late write")
        self.assertPreconditionFailed(s, h, b, tag_of(b"changed meanwhile"))
        self.assertEqual((self.read("f"), self.leftovers()), (b"changed meanwhile", []))


class WriteWithoutTagTest(EtagTestCase):
    """PUT /v1/fs/file?etag=0: no tag in the answer, nothing hashed; the
    file and its preconditions are as without it."""

    def put_untagged(self, p, data, headers=None):
        s, h, b = self.daemon.request("PUT", url("/v1/fs/file", path=p, etag=0), data,
                                      headers=headers)
        return s, h, json.loads(b)

    def test_a_write_with_etag_0_answers_no_tag_and_a_later_stat_hashes_the_bytes_written(self):
        # Many of the daemon's 256 KiB blocks, with Content-Length and chunked.
        data = os.urandom((3 << 20) + 12345)
        p = self.path("big")
        s, h, b = self.put_untagged(p, data)
        self.assertEqual((s, b["size"], b["type"]), (200, len(data), "file"), b)
        self.assertNotIn("etag", b)
        self.assertNotIn("etag", h)
        self.assertEqual(self.read("big"), data)
        s, h, b = self.daemon.request("GET", url("/v1/fs/stat", path=p))
        self.assertEqual((s, json.loads(b)["etag"], h["etag"]), (200, tag_of(data), tag_of(data)))
        conn = self.daemon.connection()
        pieces = [data[i:i + 100_000] for i in range(0, len(data), 100_000)]
        conn.request("PUT", url("/v1/fs/file", path=self.path("chunked"), etag=0), body=iter(pieces),
                     headers=self.daemon.headers(), encode_chunked=True)
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        self.assertEqual((resp.status, resp.getheader("ETag")), (200, None))
        self.assertNotIn("etag", answer)
        self.assertEqual(self.read("chunked"), data)
        s, h, _ = self.daemon.request("HEAD", url("/v1/fs/file", path=self.path("chunked")))
        self.assertEqual((s, h["etag"]), (200, tag_of(data)))

    def test_etag_1_and_no_etag_parameter_answer_the_new_tag(self):
        for params in ({"etag": 1}, {}):
            s, h, b = self.daemon.request("PUT", url("/v1/fs/file", path=self.path("f"), **params),
                                          b"tagged")
            b = json.loads(b)
            self.assertEqual((s, b["etag"], h["etag"]), (200, tag_of(b"tagged"), tag_of(b"tagged")))

    def test_a_write_with_etag_0_still_checks_if_match_and_if_none_match(self):
        p = self.put_file("f", b"current")
        s, h, b = self.put_untagged(p, b"mine", {"If-Match": tag_of(b"what I read")})
        self.assertPreconditionFailed(s, h, b, tag_of(b"current"))
        s, h, b = self.put_untagged(p, b"mine", {"If-None-Match": "*"})
        self.assertPreconditionFailed(s, h, b, tag_of(b"current"))
        self.assertEqual((self.read("f"), self.leftovers()), (b"current", []))
        s, h, b = self.put_untagged(p, b"mine", {"If-Match": tag_of(b"current")})
        self.assertEqual((s, self.read("f")), (200, b"mine"))
        self.assertNotIn("etag", b)

    def test_an_etag_value_other_than_0_or_1_is_invalid_request(self):
        s, _, b = self.daemon.request("PUT", url("/v1/fs/file", path=self.path("f"), etag="no"), b"x")
        b = json.loads(b)
        self.assertEqual((s, error_code(b), b["error"]["field"]), (400, "invalid_request", "etag"))
        self.assertFalse(os.path.exists(self.path("f")))


class DeleteRenamePreconditionTest(EtagTestCase):
    def test_a_delete_with_a_stale_tag_keeps_the_file(self):
        p = self.put_file("f", b"keep me")
        s, h, b = self.daemon.request("DELETE", url("/v1/fs", path=p), headers={"If-Match": tag_of(b"old")})
        self.assertPreconditionFailed(s, h, json.loads(b), tag_of(b"keep me"))
        self.assertTrue(os.path.exists(p))
        s, _, _ = self.daemon.request("DELETE", url("/v1/fs", path=p), headers={"If-Match": tag_of(b"keep me")})
        self.assertEqual(s, 200)
        self.assertFalse(os.path.exists(p))

    def test_a_rename_checks_if_match_on_the_source(self):
        src = self.put_file("src", b"payload")
        body = {"from": src, "to": self.path("dst")}
        s, h, b = self.daemon.request("POST", "/v1/fs/rename", body, headers={"If-Match": tag_of(b"x")})
        self.assertPreconditionFailed(s, h, json.loads(b), tag_of(b"payload"))
        self.assertEqual(json.loads(b)["error"]["path"], src)
        self.assertTrue(os.path.exists(src))
        s, _, b = self.daemon.request("POST", "/v1/fs/rename", body, headers={"If-Match": tag_of(b"payload")})
        self.assertEqual((s, self.read("dst")), (200, b"payload"))

    def test_a_rename_with_if_none_match_star_never_replaces_the_destination(self):
        src = self.put_file("src", b"new")
        self.put_file("dst", b"precious")
        body = {"from": src, "to": self.path("dst")}
        s, h, b = self.daemon.request("POST", "/v1/fs/rename", body, headers={"If-None-Match": "*"})
        self.assertPreconditionFailed(s, h, json.loads(b), tag_of(b"precious"))
        self.assertEqual((self.read("dst"), self.read("src")), (b"precious", b"new"))


if __name__ == "__main__":
    unittest.main()
