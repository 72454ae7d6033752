#include "run/code_drivers.h"

namespace agentd {
namespace {

// Python 3.8 and later. Every name lives inside _agentd_run, which
// deletes itself from __main__ before the code runs. Frames: those of
// "<string>" and of files outside the interpreter's prefixes and
// site-packages are the caller's; the rest are counted, not listed.
constexpr std::string_view kPythonDriver = R"PY(def _agentd_run():
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

    def _agentd_describe(e, tb, src, os, sys):
        import linecache
        import site
        cut = lambda s, n: s if len(s) <= n else s[:n] + "..."
        lines = src.splitlines()
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
            if fn == "<string>" or fn.startswith("<"):
                return fn
            real = os.path.realpath(fn)
            rel = os.path.relpath(real, os.path.realpath(cwd))
            return cut(rel if not rel.startswith("..") else real, 300)

        def mine(fn):
            if fn == "<string>":
                return True
            if fn.startswith("<"):
                return False
            real = os.path.realpath(fn)
            return not any(real == p or real.startswith(p.rstrip("/") + "/") for p in lib)

        def text(fn, n):
            if not n:
                return None
            if fn == "<string>":
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
            elif e.filename == "<string>" and e.lineno:
                out["source_line"] = text("<string>", e.lineno)
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

    def report(e, tb):
        if fd < 0:
            return
        try:
            import json
            data = json.dumps(_agentd_describe(e, tb, src, os, sys)).encode("utf-8", "replace")
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

}  // namespace

std::vector<std::string> PythonDriverArgv(const std::string& code) {
  return {"python3", "-c", std::string(kPythonDriver), code};
}

std::string_view PythonDriverSource() { return kPythonDriver; }

}  // namespace agentd
