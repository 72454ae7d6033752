"""A dependency-free reader for the YAML subset docs/openapi.yaml keeps to.

Accepted: block mappings and block sequences (each nested level indented
deeper than its parent; a sequence item may open a mapping on its dash
line), flow sequences of scalars (``[a, "b", 3]``), the empty ``{}`` and
``[]``, plain scalars (YAML 1.2 core schema: null, true, false, integers,
decimal floats such as ``0.01``, otherwise strings), double-quoted scalars
(JSON escapes), block scalars ``|`` and ``>`` (clip chomping), and ``#``
comments. Anything else raises
YamlError naming the line, so the file cannot silently leave the subset
that both this reader and every YAML 1.2 parser read the same way.
"""

import json
import re

_INT = re.compile(r"^-?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^-?(0|[1-9][0-9]*)\.[0-9]+$")
_KEY = re.compile(r'^("(?:[^"\\]|\\.)*"|[^\s"\'#{}\[\],&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+|$)')


class YamlError(ValueError):
    pass


def _strip_comment(text, lineno):
    out, quoted, i = [], False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            out.append(ch)
            if ch == "\\":
                i += 1
                if i < len(text):
                    out.append(text[i])
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            out.append(ch)
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            break
        else:
            out.append(ch)
        i += 1
    if quoted:
        raise YamlError("line %d: unterminated double-quoted scalar" % lineno)
    return "".join(out).rstrip()


def _scalar(text, lineno):
    text = text.strip()
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError:
            raise YamlError("line %d: bad double-quoted scalar %s" % (lineno, text)) from None
    if text == "{}":
        return {}
    if text.startswith("["):
        if not text.endswith("]"):
            raise YamlError("line %d: a flow sequence must end on its line" % lineno)
        inner = text[1:-1].strip()
        if not inner:
            return []
        items, cur, quoted = [], "", False
        for ch in inner:
            if ch == '"' and not cur.endswith("\\"):
                quoted = not quoted
            if ch == "," and not quoted:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        items.append(cur)
        return [_scalar(i, lineno) for i in items]
    if text.startswith(("'", "{", "&", "*", "!", "%", "@", "`", "|", ">")) or ": " in text \
            or text.endswith(":") or "\t" in text:
        raise YamlError("line %d: outside the supported subset: %r" % (lineno, text))
    if text in ("null", "~", ""):
        return None
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if re.match(r"^-?[0-9.]+([eE][-+]?[0-9]+)?$", text) and text.count(".") == 1:
        raise YamlError("line %d: a float outside the subset (write D.D): %r" % (lineno, text))
    return text


def load(text):
    lines = []
    raw_lines = text.split("\n")
    i = 0
    while i < len(raw_lines):
        raw = raw_lines[i]
        lineno = i + 1
        i += 1
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise YamlError("line %d: tabs in indentation" % lineno)
        content = _strip_comment(raw, lineno)
        if not content.strip():
            continue
        indent = len(content) - len(content.lstrip(" "))
        body = content.strip()
        # Block scalars swallow the following more-indented lines verbatim.
        if re.search(r"(^|:\s|-\s)[|>]$", body):
            block, block_indent = [], None
            while i < len(raw_lines):
                nxt = raw_lines[i]
                if nxt.strip():
                    ind = len(nxt) - len(nxt.lstrip(" "))
                    if ind <= indent:
                        break
                    block_indent = ind if block_indent is None else block_indent
                    if ind < block_indent:
                        raise YamlError("line %d: block scalar indentation" % (i + 1))
                    block.append(nxt[block_indent:])
                else:
                    block.append("")
                i += 1
            while block and not block[-1]:
                block.pop()
            style = body[-1]
            if style == "|":
                value = "\n".join(block) + "\n"
            else:
                value = " ".join(line.strip() for line in block if line.strip()) + "\n"
            lines.append((indent, body[:-1].rstrip(), lineno, value))
            continue
        lines.append((indent, body, lineno, None))
    value, pos = _parse_block(lines, 0, 0)
    if pos != len(lines):
        raise YamlError("line %d: unexpected indentation" % lines[pos][2])
    return value


def _parse_block(lines, pos, indent):
    if pos >= len(lines):
        return None, pos
    if lines[pos][1].startswith("- ") or lines[pos][1] == "-":
        return _parse_seq(lines, pos, lines[pos][0])
    return _parse_map(lines, pos, lines[pos][0])


def _value_after(lines, pos, indent, rest, lineno, block_value):
    """The value of a key or item whose text after ':' / '-' is `rest`."""
    if block_value is not None:
        return block_value, pos + 1
    if rest:
        return _scalar(rest, lineno), pos + 1
    if pos + 1 < len(lines) and lines[pos + 1][0] > indent:
        return _parse_block(lines, pos + 1, lines[pos + 1][0])
    return None, pos + 1


def _parse_map(lines, pos, indent):
    out = {}
    while pos < len(lines) and lines[pos][0] == indent:
        _, body, lineno, block_value = lines[pos]
        if body.startswith("- "):
            raise YamlError("line %d: a sequence item where a mapping key belongs" % lineno)
        m = _KEY.match(body + (" " if body.endswith(":") else ""))
        if not m:
            raise YamlError("line %d: expected 'key: value', got %r" % (lineno, body))
        key = m.group(1)
        key = json.loads(key) if key.startswith('"') else key
        if key in out:
            raise YamlError("line %d: duplicate key %r" % (lineno, key))
        rest = body[m.end():].strip() if block_value is None else ""
        out[key], pos = _value_after(lines, pos, indent, rest, lineno, block_value)
    if pos < len(lines) and lines[pos][0] > indent:
        raise YamlError("line %d: unexpected indentation" % lines[pos][2])
    return out, pos


def _parse_seq(lines, pos, indent):
    out = []
    while pos < len(lines) and lines[pos][0] == indent and \
            (lines[pos][1].startswith("- ") or lines[pos][1] == "-"):
        _, body, lineno, block_value = lines[pos]
        rest = body[1:].strip()
        if rest and _KEY.match(rest + (" " if rest.endswith(":") else "")) and \
                not rest.startswith(('"', "[")) or (rest.endswith(":") and block_value is None):
            # "- key: value" opens a mapping whose other keys sit at indent + 2.
            sub_indent = indent + 2
            lines[pos] = (sub_indent, rest, lineno, block_value)
            value, pos = _parse_map(lines, pos, sub_indent)
            out.append(value)
            continue
        value, pos = _value_after(lines, pos, indent, rest, lineno, block_value)
        out.append(value)
    return out, pos
