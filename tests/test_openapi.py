"""docs/openapi.yaml against docs/PROTOCOL.md, the daemon's route table and
a running daemon, so the description cannot drift from either.

For every described operation the test sends the valid and the invalid
request of its x-agentd-test, checks that the answer's status is the one
given there and is described for the operation, and validates the body:
JSON against the described schema (the test treats every described object
without an additionalProperties keyword as closed, so an undocumented
member fails as surely as a missing one; the file itself leaves them open,
since clients are promised they may ignore added fields and a generated
validator must not reject them), error answers against Error with a code listed for that
status, byte routes by media type and headers, event streams event by
event. Every secured operation is also sent without a token (401).
Operations marked x-agentd-pending are skipped, saying so, while this
daemon answers them with route_not_found.
"""

import http.client
import io
import json
import os
import re
import tarfile
import tempfile
import shutil
import time
import unittest
from urllib.parse import quote

from lib import mini_yaml
from lib.agentd_test import Daemon, error_code

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SPEC_PATH = os.path.join(REPO, "docs", "openapi.yaml")
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def load_spec():
    with open(SPEC_PATH, encoding="utf-8") as f:
        return mini_yaml.load(f.read())


def resolve(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise AssertionError("only local $refs are used: " + ref)
        target = spec
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def operations(spec):
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item, item[method]


# -- a small JSON Schema (2020-12 subset) validator ----------------------------

def validate(spec, schema, value, where="$"):
    """Returns a list of problems (empty when `value` conforms)."""
    schema = resolve(spec, schema)
    if schema is True or schema == {}:
        return []
    problems = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        if not any(_is_type(value, t) for t in types):
            return ["%s: %r is not %s" % (where, value, "/".join(types))]
    if "const" in schema and value != schema["const"]:
        problems.append("%s: %r is not %r" % (where, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        problems.append("%s: %r not in %s" % (where, value, schema["enum"]))
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append("%s: %r does not match %s" % (where, value, schema["pattern"]))
        if len(value) < schema.get("minLength", 0):
            problems.append("%s: too short" % where)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append("%s: too long" % where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append("%s: %s < %s" % (where, value, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            problems.append("%s: %s > %s" % (where, value, schema["maximum"]))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if "items" in schema:
            for i, item in enumerate(value):
                problems += validate(spec, schema["items"], item, "%s[%d]" % (where, i))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append("%s: missing required member %r" % (where, name))
        # Closed unless the file says otherwise: see the module docstring.
        extra = schema.get("additionalProperties", not props)
        for name, member in value.items():
            if name in props:
                problems += validate(spec, props[name], member, where + "." + name)
            elif extra is False:
                problems.append("%s: member %r is not described" % (where, name))
            elif isinstance(extra, dict):
                problems += validate(spec, extra, member, where + "." + name)
    return problems


def _is_type(value, t):
    return {
        "null": value is None,
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[t]


def protocol_error_table():
    """{code: status} from docs/PROTOCOL.md, "Errors"."""
    table = {}
    with open(os.path.join(REPO, "docs", "PROTOCOL.md"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\| `([a-z_]+)` \| (\d{3}) \|", line)
            if m:
                table[m.group(1)] = int(m.group(2))
    return table


def daemon_routes():
    """{(METHOD, path)} registered in daemon/api/*.cc."""
    routes = set()
    api = os.path.join(REPO, "daemon", "api")
    for name in os.listdir(api):
        if name.endswith(".cc") and not name.endswith("_test.cc"):
            with open(os.path.join(api, name), encoding="utf-8") as f:
                text = f.read()
            for m in re.finditer(r'\.Add\(\s*"([A-Z]+)",\s*"(/v1/[^"]*)"', text):
                routes.add((m.group(1), m.group(2)))
    return routes


def head_routes(routes):
    """The router answers HEAD on every GET route (server/router.cc)."""
    return {("HEAD", path) for method, path in routes if method == "GET"}


def daemon_query_parameters():
    """The query parameter names daemon/api/*.cc reads (api/query_reader.h)."""
    names = set()
    api = os.path.join(REPO, "daemon", "api")
    pattern = re.compile(r'\bq\.(?:Required|String|Bool|Number|Choice|Repeated)\(\s*"([a-z_]+)"')
    for name in os.listdir(api):
        if name.endswith(".cc") and not name.endswith("_test.cc"):
            with open(os.path.join(api, name), encoding="utf-8") as f:
                names.update(pattern.findall(f.read()))
    return names


def query_parameters(spec, item, op):
    return [p for p in (resolve(spec, p) for p in item.get("parameters", []) + op.get("parameters", []))
            if p["in"] == "query"]


class OpenApiDocumentTest(unittest.TestCase):
    """The description on its own, against PROTOCOL.md and the daemon's route table."""

    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()

    def test_it_is_openapi_3_1_with_unique_operation_ids(self):
        self.assertTrue(str(self.spec["openapi"]).startswith("3.1."))
        ids = [op["operationId"] for _, _, _, op in operations(self.spec)]
        self.assertEqual(len(ids), len(set(ids)))

    def test_every_ref_resolves(self):
        def walk(node, where):
            if isinstance(node, dict):
                if "$ref" in node:
                    try:
                        resolve(self.spec, node)
                    except (KeyError, AssertionError) as e:
                        self.fail("%s: unresolved %s (%s)" % (where, node["$ref"], e))
                for k, v in node.items():
                    walk(v, where + "/" + str(k))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, "%s[%d]" % (where, i))
        walk(self.spec, "#")

    def test_error_codes_are_exactly_those_of_protocol_md(self):
        table = protocol_error_table()
        self.assertGreater(len(table), 30)
        enum = self.spec["components"]["schemas"]["ErrorCode"]["enum"]
        self.assertEqual(sorted(enum), sorted(table))

    def test_every_error_answer_lists_codes_that_protocol_md_gives_that_status(self):
        table = protocol_error_table()
        for path, method, _, op in operations(self.spec):
            for status, response in op["responses"].items():
                response = resolve(self.spec, response)
                codes = response.get("x-agentd-codes")
                # A 503 health is the whole health document, not an error.
                if int(status) < 400 or response.get("x-agentd-document"):
                    self.assertIsNone(codes, "%s %s %s" % (method, path, status))
                    continue
                with self.subTest(op=op["operationId"], status=status):
                    self.assertTrue(codes, "an error answer lists its codes")
                    for code in codes:
                        self.assertEqual(table.get(code), int(status), code)

    def test_every_route_of_the_daemon_is_described(self):
        described = {(m.upper(), p) for p, m, _, _ in operations(self.spec)}
        registered = daemon_routes()
        self.assertGreater(len(registered), 20)
        self.assertEqual(sorted(registered - described), [],
                         "routes the daemon serves but docs/openapi.yaml does not describe")
        pending = {(m.upper(), p) for p, m, _, op in operations(self.spec)
                   if op.get("x-agentd-pending")}
        self.assertEqual(sorted(described - registered - head_routes(registered) - pending), [],
                         "described routes the daemon does not register (mark pending?)")

    def test_every_query_parameter_the_daemon_reads_is_described(self):
        described = {p["name"] for path, _, item, op in operations(self.spec)
                     for p in query_parameters(self.spec, item, op)}
        read = daemon_query_parameters()
        self.assertGreater(len(read), 15)
        self.assertEqual(sorted(read - described), [],
                         "query parameters the daemon reads but docs/openapi.yaml does not describe")
        self.assertEqual(sorted(described - read), [],
                         "described query parameters the daemon never reads")

    def test_the_metric_families_are_exactly_those_of_protocol_md(self):
        with open(os.path.join(REPO, "docs", "PROTOCOL.md"), encoding="utf-8") as f:
            table = re.findall(r"^\| `(agentd_[a-z_]+)` \| (?:counter|gauge|histogram) \|", f.read(), re.M)
        media = self.spec["paths"]["/v1/metrics"]["get"]["responses"]["200"]["content"]["text/plain"]
        self.assertGreater(len(table), 10)
        self.assertEqual(sorted(media["x-agentd-metrics"]), sorted(table))

    def test_every_operation_has_a_valid_and_an_invalid_request(self):
        for path, method, item, op in operations(self.spec):
            with self.subTest(op=op["operationId"]):
                t = op.get("x-agentd-test") or {}
                self.assertIn("valid", t)
                self.assertIn("invalid", t)
                for case in ("valid", "invalid"):
                    self.assertIn(str(t[case]["status"]), op["responses"])
                declared = {resolve(self.spec, p)["name"] for p in
                            item.get("parameters", []) + op.get("parameters", [])}
                for name in list(t["valid"].get("query", {})) + list(t["valid"].get("path", {})):
                    self.assertIn(name, declared, "the valid request uses declared parameters")
                body = t["valid"].get("body")
                if body is not None:
                    body = json.loads(json.dumps(body).replace("{root}", "/fixture-root"))
                    schema = op["requestBody"]["content"]["application/json"]["schema"]
                    self.assertEqual(validate(self.spec, schema, body), [])


class OpenApiLiveTest(unittest.TestCase):
    """Every described operation, sent to a running daemon."""

    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()
        cls.daemon = Daemon()
        cls.root = tempfile.mkdtemp(prefix="agentd-openapi-")
        cls.fixtures = {"root": cls.root, "unknown": "never-started"}
        d = cls.daemon
        for name, body in (("exited", {"command": "printf 'out\\n'; printf 'err\\n' >&2"}),
                           ("acked", {"argv": ["true"]}),
                           ("running", {"argv": ["cat"], "stdin_stream": True}),
                           ("pty", {"argv": ["sleep", "60"], "pty": {"rows": 24, "cols": 80}})):
            exec_id = "openapi-%s-%d" % (name, os.getpid())
            status, _ = d.json("PUT", "/v1/execs/" + exec_id, body)
            assert status == 201, status
            cls.fixtures[name] = exec_id
        for name in ("exited", "acked"):
            status, _ = d.json("GET", "/v1/execs/%s?wait_ms=10000" % cls.fixtures[name])
        for name in ("context", "doomed_context"):
            context_id = "openapi-%s-%d" % (name, os.getpid())
            status, _ = d.json("POST", "/v1/contexts", {"id": context_id, "runtime": "python"})
            assert status == 201, status
            cls.fixtures[name] = context_id
        with open(os.path.join(cls.root, "file.txt"), "w") as f:
            f.write("a\nb\nc\n")
        os.symlink("file.txt", os.path.join(cls.root, "link"))
        os.makedirs(os.path.join(cls.root, "dir", "sub"))
        with open(os.path.join(cls.root, "dir", "sub", "x"), "w") as f:
            f.write("x")
        with open(os.path.join(cls.root, "to-rename"), "w") as f:
            f.write("r")
        os.makedirs(os.path.join(cls.root, "to-remove", "inner"))
        cls.fixtures["daemon_port"] = str(d.port)
        cls.counter = 0

    @classmethod
    def tearDownClass(cls):
        for name in ("running", "pty"):
            cls.daemon.json("POST", "/v1/execs/%s/kill" % cls.fixtures[name], {"signal": "KILL"})
        cls.daemon.close()
        shutil.rmtree(cls.root, ignore_errors=True)

    def fill(self, text):
        def sub(m):
            name = m.group(1)
            if name == "new":
                OpenApiLiveTest.counter += 1
                return "openapi-new-%d-%d" % (os.getpid(), OpenApiLiveTest.counter)
            return self.fixtures[name]
        return re.sub(r"\{(exited|acked|running|pty|new|unknown|root|daemon_port|context|"
                      r"doomed_context)\}", sub, text)

    def fill_json(self, value):
        if isinstance(value, str):
            return self.fill(value)
        if isinstance(value, list):
            return [self.fill_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill_json(v) for k, v in value.items()}
        return value

    def build(self, path, case):
        if "then_remove" in case:  # a directory the request watches, made afresh for each send
            os.makedirs(os.path.join(self.fill(case["then_remove"]), "sub"), exist_ok=True)
        target = path
        for name, value in (case.get("path") or {}).items():
            target = target.replace("{%s}" % name, quote(self.fill(str(value)), safe=""))
        query = case.get("query") or {}
        if query:
            target += "?" + "&".join("%s=%s" % (k, quote(self.fill(str(v)), safe="/"))
                                     for k, v in query.items())
        headers = {k: self.fill(str(v)) for k, v in (case.get("headers") or {}).items()}
        body = None
        if "body" in case:
            body = json.dumps(self.fill_json(case["body"])).encode()
            headers["Content-Type"] = "application/json"
        elif "raw_body" in case:
            body = self.tar() if case["raw_body"] == "@tar" else case["raw_body"].encode()
        return target, headers, body

    @staticmethod
    def tar():
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
            data = b"inside\n"
            info = tarfile.TarInfo("sub/f.txt")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def send(self, method, target, headers, body, auth="token", then_remove=None, daemon=None):
        """(status, headers, body). A 101 answer's connection is closed unread;
        with `then_remove`, that directory is removed once the head arrived
        (a watch stream then reports it and ends). `daemon`: another than
        the shared one."""
        daemon = daemon or self.daemon
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
        try:
            h = dict(headers)
            if auth == "token":
                h["Authorization"] = "Bearer " + daemon.token
            elif auth == "wrong":
                h["Authorization"] = "Bearer wrong-" + daemon.token
            conn.request(method.upper(), target, body=body, headers=h)
            resp = conn.getresponse()
            if resp.status == 101:
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, b""
            if then_remove and resp.status == 200:
                shutil.rmtree(self.fill(then_remove))
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def check_answer(self, op, status, headers, data, where, head=False):
        """`head`: a HEAD answer, checked for its status and headers; its
        Content-Type is one described, and it has no body."""
        response = op["responses"].get(str(status))
        self.assertIsNotNone(response, "%s: status %d is not described" % (where, status))
        response = resolve(self.spec, response)
        for name, h in (response.get("headers") or {}).items():
            if h.get("required"):
                self.assertIn(name.lower(), headers, where)
            if name.lower() in headers and "schema" in h:
                value = headers[name.lower()]
                if resolve(self.spec, h["schema"]).get("type") == "integer" and value.isdigit():
                    value = int(value)
                self.assertEqual(validate(self.spec, h["schema"], value), [],
                                 "%s: header %s" % (where, name))
        content = response.get("content") or {}
        if not content:
            self.assertEqual(data, b"", "%s: a body where none is described" % where)
            return
        ctype = headers.get("content-type", "").split(";")[0].strip()
        self.assertIn(ctype, content, "%s: Content-Type %r is not described" % (where, ctype))
        if head:
            self.assertEqual(data, b"", "%s: a HEAD answer has no body" % where)
            return
        media = content[ctype]
        if ctype == "application/json":
            doc = json.loads(data)
            problems = validate(self.spec, media["schema"], doc)
            self.assertEqual(problems, [], "%s: %s" % (where, doc))
            if status >= 400 and not response.get("x-agentd-document"):
                self.assertIn(error_code(doc), response["x-agentd-codes"], where)
        elif ctype == "application/x-ndjson":
            lines = data.decode().split("\n")
            self.assertEqual(lines[-1], "", "%s: every line ends in a newline" % where)
            docs = [json.loads(line) for line in lines[:-1]]
            self.assertTrue(docs, where)
            for doc in docs:
                self.assertIn(doc.get("type"), media["x-agentd-lines"], where)
                self.assertEqual(validate(self.spec, media["x-agentd-lines"][doc["type"]], doc), [],
                                 "%s: %s" % (where, doc))
            self.assertEqual(docs[-1]["type"], media["x-agentd-final-line"], where)
        elif "x-agentd-metrics" in media:
            families = set(re.findall(r"^# TYPE (\S+) ", data.decode(), re.M))
            self.assertEqual(sorted(set(media["x-agentd-metrics"]) - families), [],
                             "%s: described metric families missing" % where)
        elif ctype == "text/event-stream":
            events = self.sse(data)
            self.assertTrue(events, where)
            for kind, payload, event_id in events:
                self.assertIn(kind, media["x-agentd-events"], where)
                self.assertRegex(event_id or "", media.get("x-agentd-id", r"^[0-9]+:[0-9]+$"), where)
                self.assertEqual(validate(self.spec, media["x-agentd-events"][kind],
                                          json.loads(payload)), [], where)
            self.assertEqual(events[-1][0], media.get("x-agentd-final-event", "exit"), where)

    @staticmethod
    def sse(data):
        events = []
        for block in data.decode().split("\n\n"):
            kind, payload, event_id = None, [], None
            for line in block.split("\n"):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    payload.append(line[6:])
                elif line.startswith("id: "):
                    event_id = line[4:]
            if kind:
                events.append((kind, "\n".join(payload), event_id))
        return events

    def test_every_operation_answers_as_described(self):
        checked = 0
        for path, method, _, op in operations(self.spec):
            tests = op["x-agentd-test"]
            # An operation that changes the whole guest (a reset) gets a
            # daemon of its own, so the shared fixtures survive it.
            own = Daemon() if tests.get("own_daemon") else None
            if own:
                self.addCleanup(own.close)
            for case_name in ("valid", "invalid"):
                case = tests[case_name]
                where = "%s %s (%s)" % (method.upper(), path, case_name)
                with self.subTest(op=op["operationId"], case=case_name):
                    target, headers, body = self.build(path, case)
                    status, rh, data = self.send(case.get("method", method), target, headers,
                                                 body, auth=case.get("auth", "token"),
                                                 then_remove=case.get("then_remove"), daemon=own)
                    if op.get("x-agentd-pending") and status == 404 and \
                            error_code(json.loads(data)) == "route_not_found":
                        self.skipTest("%s: pending in the contract; this daemon does not "
                                      "serve it yet" % where)
                    self.assertEqual(status, case["status"], "%s: %s" % (where, data[:300]))
                    self.check_answer(op, status, rh, data, where,
                                      head=case.get("method", method) == "head")
                    checked += 1
        self.assertGreaterEqual(checked, 2 * 19)

    def test_the_daemon_knows_every_query_parameter_described_for_a_route(self):
        # The daemon refuses a query parameter a route does not read
        # ("unknown query parameter", naming it); none described may be.
        for path, method, item, op in operations(self.spec):
            case = op["x-agentd-test"]["valid"]
            for param in query_parameters(self.spec, item, op):
                if param["name"] in (case.get("query") or {}):
                    continue
                with self.subTest(op=op["operationId"], param=param["name"]):
                    probe = dict(case, query=dict(case.get("query") or {}, **{param["name"]: "1"}))
                    target, headers, body = self.build(path, probe)
                    status, _, data = self.send(case.get("method", method), target, headers, body)
                    if status == 404 and op.get("x-agentd-pending"):
                        continue
                    if status == 400:
                        self.assertNotIn(b"unknown query parameter", data, data)
        target, headers, _ = self.build("/v1/fs/stat", {"query": {"path": "{root}", "surprise": "1"}})
        status, _, data = self.send("get", target, headers, None)
        self.assertEqual((status, json.loads(data)["error"]["field"]), (400, "surprise"),
                         "the probe above can fail: an unknown parameter is refused by name")

    def test_every_operation_refuses_an_unknown_query_parameter_by_name(self):
        # One strict query reader on every route: the valid request with
        # one parameter more is 400 invalid_request naming it, as described.
        checked = 0
        for path, method, _, op in operations(self.spec):
            case = op["x-agentd-test"]["valid"]
            with self.subTest(op=op["operationId"]):
                probe = dict(case, query=dict(case.get("query") or {}, agentd_unknown="1"))
                target, headers, body = self.build(path, probe)
                status, rh, data = self.send(case.get("method", method), target, headers, body,
                                             auth=case.get("auth", "token"))
                if status == 404 and op.get("x-agentd-pending"):
                    continue
                self.assertEqual(status, 400, "%s %s: %s" % (method, path, data[:300]))
                head = case.get("method", method) == "head"
                self.check_answer(op, status, rh, data, "%s %s" % (method, path), head=head)
                if not head:
                    self.assertEqual(json.loads(data)["error"].get("field"), "agentd_unknown")
                checked += 1
        self.assertGreaterEqual(checked, 19)

    def test_every_secured_operation_refuses_a_missing_token(self):
        for path, method, _, op in operations(self.spec):
            if op.get("security", self.spec.get("security")) == []:
                continue
            with self.subTest(op=op["operationId"]):
                target, headers, body = self.build(path, op["x-agentd-test"]["valid"])
                status, rh, data = self.send(method, target, headers, body, auth="none")
                self.assertEqual(status, 401)
                self.assertEqual(rh.get("www-authenticate"), "Bearer")
                self.check_answer(op, status, rh, data, "%s %s" % (method, path),
                                  head=method == "head")

    def test_the_spec_describes_an_actual_start_and_poll_field_for_field(self):
        # A regression guard for the closed schemas: a daemon answer with one
        # member more than described would fail here even if no route test did.
        status, doc = self.daemon.json("GET", "/v1/execs/%s?stdout_from=0&stderr_from=0"
                                       % self.fixtures["exited"])
        self.assertEqual(status, 200)
        self.assertEqual(validate(self.spec, {"$ref": "#/components/schemas/ExecPoll"}, doc), [])
        doc["surprise"] = 1
        self.assertNotEqual(validate(self.spec, {"$ref": "#/components/schemas/ExecPoll"}, doc),
                            [])


if __name__ == "__main__":
    unittest.main()
