#include "run/code_drivers.h"

#include <string_view>

namespace agentd {
namespace {

// Python 3.8 and later. Every name lives inside _agentd_run, which
// deletes itself from __main__ before the code runs. Frames: those of
// "<string>" and of files outside the interpreter's prefixes and
// site-packages are the caller's; the rest are counted, not listed.
// The driver of a run, in three pieces: its start (the code from argv,
// the report descriptor moved out of the way), the exception description
// the context driver shares (run/context_driver.cc), and its end.
constexpr std::string_view kPythonRunHead = R"PY(def _agentd_run():
    import sys
    import os
    g = sys.modules["__main__"].__dict__
    del g["_agentd_run"]
    src = sys.argv.pop(1)
    fd = -1
    try:
        import fcntl
        fd = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 64)
        os.close(3)
    except (OSError, AttributeError, ImportError):
        pass

)PY";

constexpr std::string_view kPythonDescribe = R"PY(    def _agentd_describe(e, tb, sources, os, sys):
        import linecache
        import site
        cut = lambda s, n: s if len(s) <= n else s[:n] + "..."
        cwd = os.getcwd()
        lib = set()
        for p in [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]:
            lib.add(os.path.realpath(p))
        try:
            for p in site.getsitepackages() + [site.getusersitepackages()]:
                lib.add(os.path.realpath(p))
        except Exception:
            pass

        def name(fn):
            if fn.startswith("<"):
                return fn
            real = os.path.realpath(fn)
            rel = os.path.relpath(real, os.path.realpath(cwd))
            return cut(rel if not rel.startswith("..") else real, 300)

        def mine(fn):
            if fn in sources:
                return True
            if fn.startswith("<"):
                return False
            real = os.path.realpath(fn)
            return not any(real == p or real.startswith(p.rstrip("/") + "/") for p in lib)

        def text(fn, n):
            if not n:
                return None
            if fn in sources:
                lines = sources[fn]
                line = lines[n - 1] if 0 < n <= len(lines) else ""
            else:
                line = linecache.getline(fn, n)
            return cut(line.strip(), 240)

        frames = []
        omitted = 0
        last = None
        while tb is not None:
            f = tb.tb_frame
            fn = f.f_code.co_filename
            if mine(fn):
                frames.append({"file": name(fn), "line": tb.tb_lineno, "function": f.f_code.co_name,
                               "source_line": text(fn, tb.tb_lineno)})
            else:
                omitted += 1
            last = tb
            tb = tb.tb_next
        kept = 30
        if len(frames) > kept:
            omitted += len(frames) - kept
            frames = frames[:kept // 2] + frames[-(kept - kept // 2):]
        t = type(e)
        mod = getattr(t, "__module__", "builtins")
        tname = t.__qualname__ if mod in ("builtins", "__main__") else mod + "." + t.__qualname__
        try:
            message = str(e)
        except BaseException:
            message = "<unprintable " + tname + ">"
        out = {"type": tname, "message": cut(message, 2000), "file": None, "line": None,
               "column": None, "source_line": None, "frames": frames, "omitted_frames": omitted}
        if isinstance(e, SyntaxError):
            out["message"] = cut(str(e.msg), 2000)
            out["file"] = name(e.filename or "<string>")
            out["line"] = e.lineno
            out["column"] = e.offset
            if e.text is not None:
                out["source_line"] = cut(e.text.strip(), 240)
            elif e.filename in sources and e.lineno:
                out["source_line"] = text(e.filename, e.lineno)
        elif frames:
            top = frames[-1]
            out["file"], out["line"], out["source_line"] = top["file"], top["line"], top["source_line"]
        if isinstance(e, KeyError) and e.args and last is not None and mine(last.tb_frame.f_code.co_filename):
            keys = _agentd_keys(e.args[0], last.tb_frame, text(last.tb_frame.f_code.co_filename, last.tb_lineno))
            if keys is not None:
                out["keys_present"] = [cut(k if isinstance(k, str) else repr(k), 100) for k in keys[:50]]
                out["keys_total"] = len(keys)
        return out

    def _agentd_keys(key, frame, line):
        # The mapping the failed subscript read: a name (or a chain of constant
        # subscripts on one) in the line, looked up without running any code.
        import ast
        def plain(v):
            return type(v) is dict or type(v).__name__ in ("_Environ", "mappingproxy", "OrderedDict", "defaultdict", "Counter")
        def resolve(node):
            if isinstance(node, ast.Name):
                for scope in (frame.f_locals, frame.f_globals):
                    if node.id in scope:
                        return True, scope[node.id]
                return False, None
            if isinstance(node, ast.Subscript):
                ok, base = resolve(node.value)
                if not ok or not plain(base):
                    return False, None
                try:
                    k = ast.literal_eval(node.slice)
                    return (True, base[k]) if k in base else (False, None)
                except Exception:
                    return False, None
            return False, None
        found = []
        try:
            tree = ast.parse(line or "")
        except SyntaxError:
            tree = None
        if tree is not None:
            for node in ast.walk(tree):
                if not isinstance(node, ast.Subscript):
                    continue
                try:
                    k = ast.literal_eval(node.slice)
                except Exception:
                    ok, k = resolve(node.slice) if isinstance(node.slice, ast.Name) else (False, None)
                    if not ok:
                        continue
                try:
                    if k != key:
                        continue
                except Exception:
                    continue
                ok, m = resolve(node.value)
                if ok and plain(m) and key not in m:
                    found.append(m)
        if len(found) != 1:
            cands = [v for v in frame.f_locals.values() if plain(v) and key not in v] if not found else []
            if len(cands) != 1:
                return None
            found = cands
        return list(found[0].keys())

)PY";

constexpr std::string_view kPythonRunTail = R"PY(    def report(e, tb):
        if fd < 0:
            return
        try:
            import json
            data = json.dumps(_agentd_describe(e, tb, {"<string>": src.splitlines()}, os, sys)).encode("utf-8", "replace")
            if len(data) <= 49152:
                while data:
                    data = data[os.write(fd, data):]
        except BaseException:
            pass

    try:
        code = compile(src, "<string>", "exec")
    except SyntaxError as e:
        e.__traceback__ = None
        report(e, None)
        sys.excepthook(type(e), e, None)
        raise SystemExit(1)
    try:
        exec(code, g)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        e.__traceback__ = tb
        report(e, tb)
        if isinstance(e, KeyboardInterrupt):
            raise
        sys.excepthook(type(e), e, tb)
        raise SystemExit(1)



_agentd_run()
)PY";

// The context driver (docs/PROTOCOL.md, "Contexts"): `python3 -c DRIVER`,
// a loop over requests on descriptor 3 (a socket; moved to a close-on-exec
// descriptor >= 64 like the run's report). A request is a 4-byte
// big-endian length and JSON {"seq", "code", "token"}; each cell is
// compiled as "<cell SEQ>" (its line numbers are the caller's, and
// linecache knows its text, so tracebacks show it) and run in __main__'s
// one globals dict, so names and imports persist. After a cell it flushes
// and writes the token to fd 1 and fd 2 (where the cell's output ends in
// the streams), then answers {"seq", "exit_code", "exception", "marked"}
// the same way (the seq tells a daemon taking the context back after a
// crash which cell an answer is for). SystemExit ends the cell, not the interpreter.
constexpr std::string_view kPythonContextHead = R"PY(def _agentd_context():
    import sys
    import os
    import json
    import linecache
    import fcntl
    g = sys.modules["__main__"].__dict__
    del g["_agentd_context"]
    fd = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(3)
)PY";

constexpr std::string_view kPythonContextLoop = R"PY(    def read_exact(n):
        buf = b""
        while len(buf) < n:
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def write_all(n, data):
        while data:
            data = data[os.write(n, data):]

    def mark(stream, n, token):
        try:
            stream.flush()
        except BaseException:
            pass
        try:
            write_all(n, token)
            return True
        except BaseException:
            return False

    sources = {}
    order = []
    while True:
        try:
            req = json.loads(read_exact(int.from_bytes(read_exact(4), "big")))
        except EOFError:
            os._exit(0)
        name = "<cell %d>" % req["seq"]
        src = req["code"]
        token = req["token"].encode()
        sources[name] = src.splitlines()
        order.append(name)
        linecache.cache[name] = (len(src), None, [l + "\n" for l in sources[name]], name)
        if len(order) > 256:
            old = order.pop(0)
            sources.pop(old, None)
            linecache.cache.pop(old, None)
        exit_code = 0
        exception = None
        try:
            exec(compile(src, name, "exec"), g)
        except SystemExit as e:
            c = e.code
            if isinstance(c, int):
                exit_code = c & 255
            elif c is not None:
                try:
                    print(c, file=sys.stderr)
                except BaseException:
                    pass
                exit_code = 1
        except BaseException as e:
            tb = None
            if not isinstance(e, SyntaxError) and e.__traceback__ is not None:
                tb = e.__traceback__.tb_next
            e.__traceback__ = tb
            try:
                exception = _agentd_describe(e, tb, sources, os, sys)
                if len(json.dumps(exception)) > 49152:
                    exception = None
            except BaseException:
                exception = None
            try:
                sys.excepthook(type(e), e, tb)
            except BaseException:
                pass
            exit_code = 1
        marked = [mark(sys.stdout, 1, token), mark(sys.stderr, 2, token)]
        data = json.dumps({"seq": req["seq"], "exit_code": exit_code, "exception": exception, "marked": marked}).encode()
        try:
            write_all(fd, len(data).to_bytes(4, "big") + data)
        except BaseException:
            os._exit(70)


_agentd_context()
)PY";

// The TypeScript drivers, in pieces like python's: each head defines
// `fs`, `cwd`, `self` (a file whose frames are the driver's own), the
// current code's file `evalFile`, `fileLines` (file -> its lines, for
// source lines) and `name` (file -> what a report calls it); kTsDescribe,
// which both share, turns an error into the report.
//
// The run driver, a preload (`bun --preload DRIVER -e CODE`): bun runs
// CODE exactly as `bun -e CODE` does (same module semantics, the file name
// "[eval]" under the cwd, the caller's line numbers), and the driver only
// listens: an "uncaughtExceptionMonitor" listener, unlike an
// "uncaughtException" one, leaves bun's own printing and exit status
// alone. It reads the frames from Bun.inspect rather than e.stack, because
// reading the stack first makes bun print the error with one frame fewer.
// The report descriptor 3 is reopened through /proc (bun has no dup) with
// close-on-exec and closed, so the code's children do not inherit it.
// A build error (a syntax error) carries its own position; it is reported
// as a SyntaxError.
constexpr std::string_view kTsRunHead = R"JS((() => {
  const fs = require("fs");
  let fd = -1;
  try {
    fd = fs.openSync("/proc/self/fd/3", "r+");
    fs.closeSync(3);
  } catch {
    return;
  }
  const args = process.execArgv;
  const at = args.indexOf("-e");
  const code = at >= 0 && at + 1 < args.length ? String(args[at + 1]) : "";
  const cwd = process.cwd();
  const self = "";
  const evalFile = (cwd === "/" ? "" : cwd) + "/[eval]";
  const fileLines = new Map([[evalFile, code.split("\n")]]);
  const name = (f) => (f === evalFile ? "[eval]" : rel(f));
)JS";

constexpr std::string_view kTsDescribe =
    R"JS(  const cut = (s, n) => (s.length <= n ? s : s.slice(0, n) + "...");
  const lib = (f) => !f.startsWith("/") || f.includes("/node_modules/") || f.startsWith("/$bunfs/") || f === self;
  const rel = (f) => cut(f.startsWith(cwd + "/") ? f.slice(cwd.length + 1) : f, 300);
  const text = (f, n) => {
    if (!n) return null;
    let lines = fileLines.get(f);
    if (lines === undefined) {
      lines = null;
      try {
        if (fs.statSync(f).size <= 4 << 20) lines = fs.readFileSync(f, "utf8").split("\n");
      } catch {}
      if (fileLines.size < 64) fileLines.set(f, lines);
    }
    return lines && n <= lines.length ? cut(lines[n - 1].trim(), 240) : null;
  };
  const describe = (e) => {
    const isObj = e !== null && (typeof e === "object" || typeof e === "function");
    let type = isObj ? String((e.constructor && e.constructor.name) || e.name || "Object") : typeof e;
    let message;
    try {
      message = isObj ? String(e.message ?? "") : String(e);
    } catch {
      message = "<unprintable " + type + ">";
    }
    const out = {type, message: cut(message, 2000), file: null, line: null, column: null, source_line: null,
                 frames: [], omitted_frames: 0};
    const pos = isObj ? e.position : undefined;
    if (pos && typeof pos.line === "number") {
      if (type === "BuildMessage") out.type = "SyntaxError";
      out.file = name(String(pos.file || evalFile));
      out.line = pos.line;
      out.column = typeof pos.column === "number" ? pos.column : null;
      out.source_line = typeof pos.lineText === "string" ? cut(pos.lineText.trim(), 240) : text(String(pos.file || evalFile), pos.line);
      return out;
    }
    // Bun.inspect, not e.stack: reading the stack (or e.line) first makes
    // bun print the uncaught error with a frame fewer.
    let stack = [];
    if (isObj) {
      try {
        const all = Bun.inspect(e, {colors: false}).split("\n");
        let end = all.length;
        while (end > 0 && !/^\s+at /.test(all[end - 1])) end--;
        let start = end;
        while (start > 0 && /^\s+at /.test(all[start - 1])) start--;
        stack = all.slice(start, end);
      } catch {}
    }
    const frames = [];
    let top = null;
    for (const l of stack) {
      const m = /^\s+at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/.exec(l);
      if (!m) {
        if (/^\s+at /.test(l)) out.omitted_frames++;
        continue;
      }
      const f = m[2];
      if (lib(f) && f !== evalFile) {
        out.omitted_frames++;
        continue;
      }
      const line = Number(m[3]);
      const frame = {file: name(f), line, function: m[1] || "<module>", source_line: text(f, line)};
      if (top === null) top = {frame, column: Number(m[4])};
      frames.push(frame);
    }
    frames.reverse();
    if (frames.length > 30) {
      out.omitted_frames += frames.length - 30;
      frames.splice(15, frames.length - 30);
    }
    out.frames = frames;
    if (top !== null) {
      out.file = top.frame.file;
      out.line = top.frame.line;
      out.column = top.column;
      out.source_line = top.frame.source_line;
    }
    return out;
  };
)JS";

constexpr std::string_view kTsRunTail = R"JS(  process.on("uncaughtExceptionMonitor", (e) => {
    try {
      const data = Buffer.from(JSON.stringify(describe(e)));
      if (data.length <= 49152) fs.writeSync(fd, data, 0, data.length, 0);
    } catch {}
  });
})();)JS";

// The context driver (docs/PROTOCOL.md, "Contexts"), `bun -e DRIVER`:
// python's loop and frames on descriptor 3 (bun cannot move it; the code's
// children do not inherit it, bun's spawn closes it). Each cell is a
// TypeScript module of its own, `<cell N>.ts` in the cwd, given to bun by a
// plugin: bun compiles it like the code of a run, so its imports resolve
// from the cwd, top-level await works and every line number is the
// caller's. vm.runInThisContext would keep declarations by itself (script
// scope) but takes neither TypeScript nor import statements, and bun's
// transpiler moves lines. So declarations are kept another way: below the
// cell's last line (no line moves) the driver appends a function that
// defines, for each top-level name, a global getter (and a setter unless
// it is a constant) onto the module's live binding, and an import of a
// hook module that imports the cell back and calls it. Imports are
// evaluated first, and a cycle sees the hoisted function: every name is
// published before the cell's first line runs, so a cell that throws
// keeps what it declared before the throw (names it never reached are
// removed again). Later cells read and assign them as globals; a name
// declared again is a new binding (functions of earlier cells keep theirs).
// The names come from bun's REPL transform (each top-level name its own
// `var`, synthetic import names too, which the code never spells); an
// assignment to each tells the constants. A cell that declares nothing
// gets no hook, only `export {}` (still a module). Errors are printed by
// console.error as bun prints an uncaught one, and reported as in a run.
constexpr std::string_view kTsContextHead = R"JS(const fs = require("fs");
const cwd = process.cwd();
const base = cwd === "/" ? "" : cwd;
const self = base + "/[eval]";
const path = (n) => base + "/<cell " + n + ">.ts";
const fileLines = new Map();
const cells = new Map();
let evalFile = "";
const name = (f) => (f.startsWith(base + "/<cell ") && f.endsWith(">.ts") ? f.slice(base.length + 1, -3) : rel(f));
)JS";

constexpr std::string_view kTsContextLoop =
    R"JS(const repl = new Bun.Transpiler({loader: "ts", replMode: true});
const plain = new Bun.Transpiler({loader: "ts"});
const publisher = (code) => {
  const names = [];
  const fixed = new Set();
  try {
    for (const l of repl.transformSync(code).split("\n")) {
      const m = /^var (.+);$/.exec(l);
      if (!m) break;
      for (const n of m[1].split(", ")) {
        if (new RegExp("(?<![\\w$])" + n.replace(/\$/g, "\\$") + "(?![\\w$])").test(code)) names.push(n);
      }
    }
    plain.transformSync(code + "\n" + names.map((n) => n + " = 0;").join("\n"));
  } catch (e) {
    for (const x of e.errors || [e]) {
      const m = /"(.+?)".* constant/.exec(String(x.message));
      if (m) fixed.add(m[1]);
    }
  }
  return [names, names.map((n) => `__agentd_d("${n}", () => ${n}` + (fixed.has(n) ? ")" : `, (__agentd_v) => { ${n} = __agentd_v })`)).join("; ")];
};
Bun.plugin({
  name: "agentd-cells",
  setup(b) {
    b.onResolve({filter: /.*/, namespace: "agentd-cell"}, (a) => ({path: path(a.path)}));
    b.onResolve({filter: /.*/, namespace: "agentd-hook"}, (a) => ({path: a.path, namespace: "agentd-hook"}));
    b.onLoad({filter: /\/<cell \d+>\.ts$/}, (a) => ({contents: cells.get(a.path) ?? "", loader: "ts"}));
    b.onLoad({filter: /.*/, namespace: "agentd-hook"}, (a) => ({
      contents: `import { __agentd_publish as p } from "agentd-cell:${a.path}"; p();`, loader: "js"}));
  },
});
const fail = (e) => {
  try {
    console.error(e);
  } catch {}
};
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
const chunk = Buffer.alloc(1 << 16);
let have = Buffer.alloc(0);
const take = async (n) => {
  while (have.length < n) {
    const got = await new Promise((ok) => fs.read(3, chunk, 0, chunk.length, null, (err, k) => ok(err ? 0 : k)));
    if (!got) process.exit(0);
    have = Buffer.concat([have, chunk.subarray(0, got)]);
  }
  const out = have.subarray(0, n);
  have = have.subarray(n);
  return out;
};
const mark = (s, token) => new Promise((ok) => {
  try {
    s.write(token, (err) => ok(!err));
  } catch {
    ok(false);
  }
});
for (;;) {
  const req = JSON.parse((await take((await take(4)).readUInt32BE(0))).toString());
  const file = path(req.seq);
  const code = String(req.code);
  const [names, publish] = publisher(code);
  cells.set(file, code + (names.length ? `\nimport "agentd-hook:${req.seq}";\nexport function __agentd_publish() { ` +
            `const __agentd_d = (n, get, set) => { try { Object.defineProperty(globalThis, n, {get, set, ` +
            `configurable: true, enumerable: true}) } catch {} }; ${publish} }\n` : "\nexport {};\n"));
  fileLines.set(file, code.split("\n"));
  if (fileLines.size > 256) fileLines.delete(fileLines.keys().next().value);
  evalFile = file;
  let exit_code = 0;
  let exception = null;
  try {
    await import("agentd-cell:" + req.seq);
  } catch (e) {
    fail(e);
    exit_code = 1;
    for (const n of names) {
      try {
        globalThis[n];
      } catch {
        delete globalThis[n];
      }
    }
    try {
      exception = describe(e);
      if (Buffer.byteLength(JSON.stringify(exception)) > 49152) exception = null;
    } catch {
      exception = null;
    }
  }
  cells.delete(file);
  const marked = await Promise.all([mark(process.stdout, req.token), mark(process.stderr, req.token)]);
  const body = Buffer.from(JSON.stringify({seq: req.seq, exit_code, exception, marked}));
  let data = Buffer.concat([Buffer.alloc(4), body]);
  data.writeUInt32BE(body.length);
  while (data.length) data = data.subarray(fs.writeSync(3, data));
}
)JS";

}  // namespace

std::vector<std::string> PythonDriverArgv(const std::string& code) {
  return {"python3", "-c", PythonDriverSource(), code};
}

std::string PythonDriverSource() {
  std::string out(kPythonRunHead);
  out += kPythonDescribe;
  out += kPythonRunTail;
  return out;
}

std::string TsDriverSource() {
  std::string out(kTsRunHead);
  out += kTsDescribe;
  out += kTsRunTail;
  return out;
}

std::vector<std::string> TsDriverArgv(const std::string& driver_path, const std::string& code) {
  return {"bun", "--preload", driver_path, "-e", code};
}

std::vector<std::string> PythonContextDriverArgv() {
  std::string driver(kPythonContextHead);
  driver += kPythonDescribe;
  driver += kPythonContextLoop;
  return {"python3", "-c", std::move(driver)};
}

std::vector<std::string> TsContextDriverArgv() {
  std::string driver(kTsContextHead);
  driver += kTsDescribe;
  driver += kTsContextLoop;
  return {"bun", "-e", std::move(driver)};
}

}  // namespace agentd
