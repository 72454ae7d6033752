#!/usr/bin/env python3
"""The daemon's layers as the build enforces them (docs/ARCHITECTURE.md).

For every pair of layers (L, M) this asks the preprocessor whether
`#include "M/<header>"` resolves with exactly the include paths and
definitions L's sources are compiled with (build/daemon/layers.txt,
written by daemon/CMakeLists.txt), and includes it where it should. It
must resolve and preprocess when M is L or lies beneath L by the rules
below, and not resolve otherwise. So the test fails both when the build lets a layer
reach upward and when it cuts an arrow the rules allow.

It also checks the names a layer keeps to itself (PRIVATE): a source file
of another layer that includes such a header or names such a type fails;
and that trees/, the extraction library beneath the daemon and the client,
includes nothing but its own and protocol/'s headers.

usage: layer_check.py <build>/daemon/layers.txt <source>/daemon
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

# Each layer and the layers it may include directly (the arrows point down).
RULES = {
    "sys": [],
    "log": [],
    "metrics": [],
    "limits": ["sys"],
    "spool": ["log", "sys"],
    "proc": ["log", "sys"],
    "fs": ["log", "sys"],
    "search": ["fs", "log", "sys"],
    "auth": ["log", "sys"],
    "server": ["log", "sys"],
    "exec": ["auth", "fs", "limits", "log", "metrics", "proc", "spool", "sys"],
    "run": ["exec", "fs", "metrics", "proc", "sys"],
    "reuse": ["auth", "exec", "fs", "log", "metrics", "proc", "sys"],
    "upgrade": ["log", "proc", "sys"],
    "config": ["exec", "log", "server"],
    "api": ["auth", "config", "exec", "fs", "log", "metrics", "proc", "reuse", "run", "search",
            "server", "sys"],
}

# Headers and types only their own layer (and the unit-test helpers) may
# use: the layers above read an exec through exec/exec_view.h; the mutable
# record behind it is the engine's.
PRIVATE = {
    "exec": {"headers": ["exec/exec_record.h"], "types": ["ExecRecord"]},
}


def private_uses(source):
    """Every use of another layer's private header or type, as messages."""
    found = []
    for owner, names in PRIVATE.items():
        include = re.compile(r'#\s*include\s*"(' + "|".join(map(re.escape, names["headers"])) + ')"')
        word = re.compile(r"\b(" + "|".join(names["types"]) + r")\b")
        for layer in sorted(os.listdir(source)):
            path = os.path.join(source, layer)
            if layer in (owner, "testing") or not os.path.isdir(path):
                continue
            for name in sorted(os.listdir(path)):
                if not name.endswith((".h", ".cc")):
                    continue
                with open(os.path.join(path, name)) as f:
                    for n, line in enumerate(f, 1):
                        if include.search(line) or word.search(line):
                            found.append(f"{layer}/{name}:{n}: uses {owner}/'s private "
                                         f"{(include.search(line) or word.search(line)).group(1)}")
    return found


def shared_library_uses(source):
    """trees/ lies beneath the daemon and the client alike (docs/ARCHITECTURE.md):
    its files may include only its own and protocol/'s headers."""
    found = []
    root = os.path.join(os.path.dirname(os.path.abspath(source)), "trees")
    include = re.compile(r'#\s*include\s*"([^"]+)"')
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    m = include.search(line)
                    if m and not m.group(1).startswith(("agentd/trees/", "agentd/protocol/")):
                        found.append(f"{os.path.relpath(path, os.path.dirname(root))}:{n}: "
                                     f"trees/ includes \"{m.group(1)}\", which is above it")
    return found


def beneath(layer):
    seen, todo = set(), list(RULES[layer])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(RULES[m])
    return seen


def main():
    layers_txt, source = sys.argv[1], sys.argv[2]
    build = {}
    with open(layers_txt) as f:
        for line in f.read().splitlines():
            if line.startswith("cxx "):
                build["cxx"] = line[4:]
            elif line:
                layer, kind, value = line.split(" ", 2)
                build.setdefault(layer, {"include": [], "define": []})[kind].append(value)
    missing = set(RULES) ^ (set(build) - {"cxx"})
    if missing:
        sys.exit(f"layers in the build and in RULES differ: {sorted(missing)}")
    dirs = {d for d in os.listdir(source) if os.path.isdir(os.path.join(source, d))}
    unruled = dirs - set(RULES) - {"testing"}
    if unruled:
        sys.exit(f"daemon directories with no layer rule: {sorted(unruled)}")
    # Each layer's probe is its header with the fewest includes: any header
    # shows whether the directory is reachable, and a light one keeps the
    # runs from parsing Asio over and over.
    def include_count(layer, name):
        with open(os.path.join(source, layer, name)) as f:
            return sum(1 for line in f if re.match(r"\s*#\s*include\b", line))

    header = {m: min((h for h in os.listdir(os.path.join(source, m)) if h.endswith(".h")),
                     key=lambda h, m=m: (include_count(m, h), h))
              for m in RULES}

    # One preprocessor run per layer (not per pair: 256 runs spent a minute
    # of CI parsing Asio): __has_include resolves each layer's header exactly
    # as #include would, and each allowed one is then included, so its own
    # includes must resolve too.
    def probe(layer, tmp):
        src = os.path.join(tmp, f"{layer}_includes.cc")
        out = src + ".i"
        with open(src, "w") as f:
            for target in RULES:
                f.write(f'#if __has_include("{target}/{header[target]}")\n'
                        f"agentd_reaches {target}\n")
                if target == layer or target in beneath(layer):
                    f.write(f'#include "{target}/{header[target]}"\n')
                f.write("#endif\n")
        cmd = [build["cxx"], "-std=c++20", "-E", "-P", "-o", out, src]
        cmd += ["-I" + d for d in build[layer]["include"] if d]
        cmd += ["-D" + d for d in build[layer]["define"] if d]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            return [f"{layer} cannot include every layer beneath it:\n{run.stderr[:2000]}"]
        with open(out) as f:
            reached = set(re.findall(r"^agentd_reaches (\w+)$", f.read(), re.M))
        wrong = []
        for target in RULES:
            allowed = target == layer or target in beneath(layer)
            if allowed and target not in reached:
                wrong.append(f"{layer} may include {target}/ but cannot")
            if not allowed and target in reached:
                wrong.append(f"{layer} must not include {target}/ but can")
        return wrong

    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(2) as pool:
        pairs = [(l, m) for l in RULES for m in RULES]
        results = [r for wrong in pool.map(lambda l: probe(l, tmp), RULES) for r in wrong]
    failures = [r for r in results if r] + private_uses(source) + shared_library_uses(source)
    for r in failures:
        print(r)
    allowed = sum(1 for l, m in pairs if m == l or m in beneath(l))
    print(f"{len(pairs)} layer pairs: {allowed} includes allowed and possible, "
          f"{len(pairs) - allowed} forbidden and refused by the build; {len(failures)} wrong")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
