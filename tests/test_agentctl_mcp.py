"""agentctl mcp over stdio against a live daemon, driven by the official MCP
TypeScript SDK client (tests/mcp/client.mjs): the tools and their schemas,
each tool's answer checked against the daemon's state, retry-safe exec ids,
progress, cancellation killing the exec or the run, the result bound, and protocol
errors answering the JSON-RPC codes."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from test_agentctl_exec import AGENTCTL, AgentctlTestCase

MCP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp")
NODE = shutil.which("node") or "/usr/local/lib/agentd-deps/node/bin/node"
SDK = os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "sdk")

TOOLS = [
    "exec", "run_code", "read_file", "write_file", "edit_file", "search", "glob", "list_dir", "stat",
]


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@unittest.skipUnless(os.path.isdir(SDK), "the MCP SDK is not installed (scripts/install-deps)")
class McpTestCase(AgentctlTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="agentd-mcp-")
        cls.token_file = os.path.join(cls.tmp, "token")
        with open(cls.token_file, "w") as f:
            f.write(cls.daemon.token + "\n")
        cls.mcp_env = dict(cls.env, AGENTD_TOKEN_FILE=cls.token_file)
        del cls.mcp_env["AGENTD_TOKEN"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)
        super().tearDownClass()

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="agentd-mcp-work-")
        self.addCleanup(shutil.rmtree, self.work, True)

    def sdk(self, scenario, *args, **env):
        run_env = dict(self.mcp_env, MCP_AGENTCTL=AGENTCTL, MCP_WORK=self.work,
                       MCP_ARGS=json.dumps(list(args)), **env)
        r = subprocess.run([NODE, os.path.join(MCP_DIR, "client.mjs"), scenario],
                           capture_output=True, env=run_env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        return json.loads(r.stdout)

    def exec_record(self, exec_id, wait_ms=0):
        status, body = self.daemon.json(
            "GET", "/v1/execs/%s?wait_ms=%d&until=exit" % (exec_id, wait_ms))
        self.assertEqual(status, 200, body)
        return body


class McpToolsTest(McpTestCase):
    def test_sdk_client_lists_every_tool_and_calls_each_against_the_guest(self):
        out = self.sdk("tools")
        self.assertEqual(sorted(t["name"] for t in out["tools"]), sorted(TOOLS))
        for tool in out["tools"]:
            self.assertIs(tool["schemaOk"], True, tool)
            self.assertGreater(len(tool["description"]), 40, tool["name"])
        self.assertEqual(out["serverVersion"]["name"], "agentctl")

        path = os.path.join(self.work, "a.txt")
        with open(path) as f:
            self.assertEqual(f.read(), "one\nTWO\nthree\n")  # written, then edited
        self.assertFalse(out["write"]["isError"])
        self.assertEqual(out["write"]["structuredContent"]["size"], 14)

        self.assertEqual(text_of(out["read"]), "two\nthree\n")
        self.assertEqual(out["read"]["structuredContent"]["content"], "two\nthree\n")

        st = out["stat"]["structuredContent"]
        self.assertEqual((st["type"], st["size"]), ("file", os.stat(path).st_size))

        self.assertTrue(out["missing"]["isError"])
        self.assertEqual(out["missing"]["structuredContent"]["error"]["code"], "not_found")
        self.assertIn("not_found", text_of(out["missing"]))

        names = sorted(os.path.basename(e["path"])
                       for e in out["list"]["structuredContent"]["entries"])
        self.assertEqual(names, ["a.txt"])  # what the directory held then

        self.assertEqual([e["path"] for e in out["glob"]["structuredContent"]["entries"]],
                         [path])
        matches = out["search"]["structuredContent"]["matches"]
        self.assertEqual([(m["path"], m["line"], m["text"]) for m in matches],
                         [(path, 2, "two")])

        self.assertFalse(out["edit"]["isError"], out["edit"])
        self.assertIn("-two\n+TWO\n", text_of(out["edit"]))
        self.assertEqual(out["edit"]["structuredContent"]["size"], 14)
        mismatch = out["mismatch"]["structuredContent"]["error"]
        self.assertTrue(out["mismatch"]["isError"])
        self.assertEqual((mismatch["code"], mismatch["found"], mismatch["count"]),
                         ("edit_mismatch", 1, 2))

        ex = out["exec"]["structuredContent"]
        self.assertEqual((ex["exit_code"], ex["stdout"], ex["stderr"]), (3, "hi\n", "err\n"))
        self.assertTrue(text_of(out["exec"]).startswith("exec %s: exit 3" % ex["id"]))
        self.assertEqual(self.exec_record(ex["id"])["exit_code"], 3)

        # The same id twice ran the command once.
        self.assertEqual(out["retry1"]["structuredContent"]["stdout"], "ran\n")
        self.assertEqual(out["retry2"]["structuredContent"]["stdout"], "ran\n")
        with open(os.path.join(self.work, "runs")) as f:
            self.assertEqual(f.read(), "run\n")

        run = out["run"]["structuredContent"]
        self.assertEqual(run["stdout"], "done\n")
        self.assertEqual([(c["path"], c["change"]) for c in run["changed_files"]],
                         [("made.txt", "added")])
        self.assertTrue(os.path.exists(os.path.join(self.work, "made.txt")))

        self.assertEqual(out["progressExec"]["structuredContent"]["exit_code"], 0)
        self.assertGreaterEqual(len(out["progress"]), 2, out["progress"])
        progress = [p["progress"] for p in out["progress"]]
        self.assertEqual(progress, sorted(set(progress)))

    def test_cancelling_a_call_kills_its_exec_and_the_session_goes_on(self):
        exec_id = "mcp-cancel-%d" % os.getpid()
        out = self.sdk("cancel", MCP_EXEC_ID=exec_id)
        self.assertTrue(out["outcome"].startswith("aborted"), out)
        self.assertEqual(out["after"]["structuredContent"]["stdout"], "still here\n")
        # Bounded by the exec's end (the kill), not by a clock of ours.
        record = self.exec_record(exec_id, wait_ms=30000)
        self.assertEqual((record["state"], record["signal"]), ("exited", "KILL"), record)

    def test_cancelling_a_code_run_ends_its_process(self):
        out = self.sdk("cancelRun")
        self.assertTrue(out["outcome"].startswith("aborted"), out)
        self.assertEqual(out["after"]["structuredContent"]["stdout"], "still here\n")
        with open(os.path.join(self.work, "run-started")) as f:
            pid = int(f.read())
        # The daemon kills a run whose client went away (it looks every
        # second): bounded by that kill, not by a clock of ours.
        while os.path.exists("/proc/%d" % pid):
            time.sleep(0.05)

    def test_every_result_is_cut_to_the_bound_and_says_so(self):
        with open(os.path.join(self.work, "big.txt"), "w") as f:
            f.writelines("line %d\n" % i for i in range(1, 20001))
        os.mkdir(os.path.join(self.work, "many"))
        for i in range(300):
            open(os.path.join(self.work, "many", "file-%03d" % i), "w").close()
        out = self.sdk("cut", "--max-result-bytes", "4096")
        for name, result in out.items():
            self.assertLessEqual(len(text_of(result).encode()), 4096, name)
            self.assertLessEqual(len(json.dumps(result["structuredContent"],
                                                separators=(",", ":")).encode()), 4096, name)
        exec_text = text_of(out["exec"])
        self.assertTrue(exec_text.split("\n")[2].startswith("1"), exec_text[:200])
        self.assertIn("bytes omitted", exec_text)
        self.assertTrue(exec_text.rstrip().endswith("100000"), exec_text[-200:])
        self.assertEqual(out["exec"]["structuredContent"]["output_cut"]["stdout_bytes"],
                         len("".join("%d\n" % i for i in range(1, 100001))))

        read = out["read"]
        nxt = read["structuredContent"]["cut"]["next_start_line"]
        self.assertIn("read on with start_line %d" % nxt, text_of(read))
        self.assertTrue(text_of(read).startswith("line 1\nline 2\n"))
        self.assertIn("line %d\n[cut" % (nxt - 1), text_of(read))

        listing = out["list"]["structuredContent"]
        self.assertEqual(listing["cut"]["fields"]["entries"]["items"], 300)
        self.assertLess(listing["cut"]["fields"]["entries"]["kept_items"], 300)


class McpProtocolTest(McpTestCase):
    def converse(self, *lines, args=()):
        """Sends raw lines to agentctl mcp and answers the JSON lines it wrote."""
        r = subprocess.run([AGENTCTL, "mcp", *args], input="".join(l + "\n" for l in lines).encode(),
                           capture_output=True, env=self.mcp_env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(l) for l in r.stdout.decode().splitlines()]

    INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}})

    def request(self, id, method, params=None):
        m = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            m["params"] = params
        return json.dumps(m)

    def test_initialize_negotiates_the_protocol_revision(self):
        answers = self.converse(self.INIT)
        self.assertEqual(answers[0]["result"]["protocolVersion"], "2025-06-18")
        self.assertIn("tools", answers[0]["result"]["capabilities"])
        unknown = self.INIT.replace("2025-06-18", "1999-01-01")
        self.assertEqual(self.converse(unknown)[0]["result"]["protocolVersion"], "2025-11-25")

    def test_protocol_errors_answer_the_json_rpc_codes(self):
        answers = self.converse(
            "{not json",
            "[1, 2]",
            json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            self.request(2, "tools/list"),  # before initialize
            self.INIT,
            '{"jsonrpc":"2.0","method":"notifications/initialized"}',
            self.request(3, "no/such/method"),
            self.request(4, "tools/call", {"name": "no_such_tool", "arguments": {}}),
            self.request(5, "tools/call", {"name": "exec", "arguments": {"command": 7}}),
            self.request(6, "tools/call", {"name": "exec", "arguments": {}}),
            self.request(7, "tools/call", {"name": "stat", "arguments": {"path": "/", "x": 1}}),
            self.request(8, "ping"),
        )
        by_id = {a.get("id"): a for a in answers}
        codes = [a["error"]["code"] for a in answers if a.get("id") is None]
        self.assertEqual(codes, [-32700, -32600])
        self.assertEqual(by_id[1]["error"]["code"], -32600)
        self.assertEqual(by_id[2]["error"]["code"], -32600)
        self.assertEqual(by_id[3]["error"]["code"], -32601)
        self.assertEqual(by_id[4]["error"]["code"], -32602)
        self.assertIn("no_such_tool", by_id[4]["error"]["message"])
        self.assertEqual(by_id[5]["error"]["code"], -32602)
        self.assertIn("arguments.command: expected a string", by_id[5]["error"]["message"])
        self.assertIn("arguments.command is required", by_id[6]["error"]["message"])
        self.assertIn("arguments.x is not an argument", by_id[7]["error"]["message"])
        self.assertEqual(by_id[8]["result"], {})

    def test_the_token_never_comes_from_the_command_line(self):
        r = subprocess.run([AGENTCTL, "--token", "secret", "mcp"], input=b"",
                           capture_output=True, env=self.mcp_env, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--token-file", r.stderr)

    def test_a_wrong_token_is_a_tool_error_not_a_crash(self):
        bad = os.path.join(self.tmp, "bad-token")
        with open(bad, "w") as f:
            f.write("wrong")
        with subprocess.Popen([AGENTCTL, "--token-file", bad, "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=self.mcp_env) as proc:
            proc.stdin.write((self.INIT + "\n" + self.request(1, "tools/call", {
                "name": "stat", "arguments": {"path": "/"}}) + "\n").encode())
            proc.stdin.flush()
            self.assertEqual(json.loads(proc.stdout.readline())["id"], 0)
            answer = json.loads(proc.stdout.readline())
            proc.stdin.close()
        self.assertTrue(answer["result"]["isError"])
        self.assertEqual(answer["result"]["structuredContent"]["error"]["code"], "unauthorized")


if __name__ == "__main__":
    unittest.main()
