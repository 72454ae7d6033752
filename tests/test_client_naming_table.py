"""docs/CLIENT.md's naming table and error classes are what the clients have.

Every Python cell of the naming table is a method of the blocking Client
and of aio.AsyncClient (awaitable there); a cell marked "to come" is in
neither, so the table cannot claim too much or too little. The C++ column
equals the list client/tests/naming_table_test.cc compiles against Client
and AsyncClient. Every error code of docs/PROTOCOL.md maps to the class
the error table names, in Python (the raised class) and in C++
(client/include/agentd/client/error_classes.def behind ErrorClassOf)."""

import inspect
import os
import re
import unittest

from lib import pyclient  # noqa: F401  (puts client/python on sys.path)

import agentd_client as ac
from agentd_client.aio import AsyncClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TO_COME = "*(to come)*"


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def section(doc, title):
    """The lines of `## title` up to the next `## ` heading."""
    start = doc.index("\n## %s\n" % title)
    end = doc.find("\n## ", start + 1)
    return doc[start:end if end >= 0 else len(doc)]


def table_rows(text):
    """The body rows of the first markdown table in `text`, as cell lists."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows[2:]]


def cell_name(cell):
    """(name, implemented) of a cell like "`name`" or "`name` *(to come)*"."""
    m = re.fullmatch(r"`([A-Za-z_]+)`( \*\(to come\)\*)?", cell)
    if not m:
        raise AssertionError("a naming table cell is not `name` [*(to come)*]: %r" % cell)
    return m.group(1), m.group(2) is None


def naming_table():
    text = section(read("docs", "CLIENT.md"), "Naming table")
    header = [line for line in text.splitlines() if line.startswith("|")][0]
    return header, table_rows(text)


class NamingTableTest(unittest.TestCase):
    def setUp(self):
        self.header, self.rows = naming_table()
        self.assertGreater(len(self.rows), 30)

    def column(self, index):
        return [cell_name(r[index]) for r in self.rows]

    def test_the_table_has_the_agreed_columns(self):
        self.assertEqual(self.header,
                         "| operation | wire route | C++ | Python | TypeScript | answer type |")
        for r in self.rows:
            self.assertEqual(len(r), 6, r)

    def test_names_are_one_scheme_snake_case_and_camel_case_of_the_cxx_name(self):
        for cxx, py, ts in zip(self.column(2), self.column(3), self.column(4)):
            words = re.findall(r"[A-Z][a-z0-9]*", cxx[0])
            self.assertEqual(py[0], "_".join(w.lower() for w in words), cxx)
            self.assertEqual(ts[0], words[0].lower() + "".join(words[1:]), cxx)

    def test_every_python_row_is_a_method_of_client_and_async_client(self):
        aio = AsyncClient("http://127.0.0.1:1")
        self.addCleanup(aio.sync.close)
        for name, implemented in self.column(3):
            with self.subTest(name=name):
                sync = getattr(ac.Client, name, None)
                if not implemented:
                    self.assertIsNone(sync, "%s is marked to come but exists: update the table"
                                      % name)
                    continue
                self.assertTrue(callable(sync), "Client lacks %s" % name)
                fn = getattr(aio, name, None)
                self.assertTrue(callable(fn), "AsyncClient lacks %s" % name)
                if name != "set_token":
                    self.assertTrue(inspect.iscoroutinefunction(fn)
                                    or inspect.isasyncgenfunction(fn),
                                    "AsyncClient.%s is not awaitable" % name)

    def test_the_cxx_column_is_the_list_the_cxx_test_compiles(self):
        compiled = re.findall(r"^  X\((\w+)\)", read("client", "tests", "naming_table_test.cc"),
                              re.M)
        self.assertEqual(compiled, [n for n, implemented in self.column(2) if implemented])
        headers = read("client", "include", "agentd", "client", "client.h")
        for name, implemented in self.column(2):
            if not implemented:
                self.assertNotRegex(headers, r"\b%s\(" % name,
                                    "%s is marked to come but Client has it" % name)


def error_codes_def():
    """(enum, wire code, status) rows of protocol's error_codes.def."""
    text = read("protocol", "include", "agentd", "protocol", "error_codes.def")
    return [(e, w, int(s)) for e, w, s in
            re.findall(r'^AGENTD_ERROR_CODE\((\w+), "(\w+)", (\d+)\)', text, re.M)]


class ErrorClassTableTest(unittest.TestCase):
    def setUp(self):
        rows = table_rows(section(read("docs", "CLIENT.md"), "Error classes"))
        self.fallback = [r[1] for r in rows if r[0] == "any other code"]
        self.table = {}
        for code, cls in rows:
            if code == "any other code":
                continue
            self.table[code.strip("`")] = cls.strip("`")

    def test_every_code_of_protocol_md_and_the_client_codes_has_one_class(self):
        wire = re.findall(r"^\| `([a-z_]+)` \| \d{3} \|", read("docs", "PROTOCOL.md"), re.M)
        self.assertGreater(len(wire), 40)
        self.assertEqual(sorted(set(wire) - set(self.table)), [])
        self.assertEqual(sorted(self.table), sorted(w for _, w, _ in error_codes_def()))
        self.assertEqual(self.fallback, ["`UnknownError`"])

    def test_python_raises_the_class_the_table_names(self):
        for code, cls in self.table.items():
            with self.subTest(code=code):
                e = ac.error_for(code, "m", 400)
                self.assertEqual(type(e).__name__, cls)
                self.assertIs(getattr(ac, cls), type(e))
                self.assertEqual(e.code, code)
        newer = ac.error_for("some_future_code", "m", 409)
        self.assertIs(type(newer), ac.UnknownError)
        self.assertEqual((newer.code, newer.status), ("some_future_code", 409))

    def test_cxx_error_class_of_names_the_class_the_table_names(self):
        classes = dict(re.findall(r'^AGENTD_ERROR_CLASS\((\w+), "(\w+)"\)',
                                  read("client", "include", "agentd", "client",
                                       "error_classes.def"), re.M))
        cxx = {w: classes.get(e) for e, w, _ in error_codes_def()}
        self.assertEqual(cxx, self.table)


if __name__ == "__main__":
    unittest.main()
