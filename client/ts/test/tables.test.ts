// docs/CLIENT.md's tables hold for this client: every TypeScript cell of
// the naming table names a method of Client (and a cell marked "(to come)"
// names none), and every row of the error table is an exported class that
// the client raises for that code, with UnknownError for any other code.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import * as agentd from "../src/index.js";
import { errorFromBody } from "../src/errors.js";

const packageDir = process.env.AGENTD_TS_PACKAGE_DIR ?? fileURLToPath(new URL("../..", import.meta.url));
const clientMd = readFileSync(join(packageDir, "..", "..", "docs", "CLIENT.md"), "utf8");

/** The rows of the table under heading `title`, split into trimmed cells (header and rule dropped). */
function tableRows(title: string): string[][] {
  const start = clientMd.indexOf(`\n${title}\n`);
  assert.ok(start >= 0, `docs/CLIENT.md has a "${title}" section`);
  const rest = clientMd.slice(start + title.length + 2);
  const end = rest.search(/\n#{1,3} /);
  const lines = (end < 0 ? rest : rest.slice(0, end)).split("\n").filter((l) => l.startsWith("|"));
  return lines.slice(2).map((l) => l.slice(1, -1).split(" | ").map((c) => c.trim()));
}

test("every TypeScript cell of the naming table is a Client method, and only those marked to come are missing", () => {
  const rows = tableRows("## Naming table");
  assert.ok(rows.length >= 30, `the naming table has ${rows.length} rows`);
  const header = clientMd.slice(clientMd.indexOf("## Naming table")).split("\n").find((l) => l.startsWith("|"))!;
  const column = header.slice(1, -1).split(" | ").map((c) => c.trim()).indexOf("TypeScript");
  assert.ok(column > 0, "the naming table has a TypeScript column");
  const proto = agentd.Client.prototype as unknown as Record<string, unknown>;
  for (const row of rows) {
    const cell = row[column]!;
    const name = /^`([A-Za-z]+)`/.exec(cell)?.[1];
    assert.ok(name, `a TypeScript cell names a method: ${row.join(" | ")}`);
    assert.equal(name, name[0]!.toLowerCase() + name.slice(1), `${name} is camelCase`);
    const toCome = cell.includes("(to come)");
    assert.equal(typeof proto[name] === "function", !toCome,
      toCome ? `${name} is implemented: drop its "(to come)"` : `Client has no method ${name} (row: ${row[0]})`);
  }
});

test("every code of the error table is its exported class, and any other code is UnknownError", () => {
  const rows = tableRows("## Error classes");
  assert.ok(rows.length >= 40, `the error table has ${rows.length} rows`);
  const exported = agentd as unknown as Record<string, unknown>;
  const named = new Set<string>();
  for (const [codeCell, classCell] of rows) {
    const cls = /^`([A-Za-z]+)`$/.exec(classCell ?? "")?.[1];
    assert.ok(cls, `an error row names a class: ${codeCell} | ${classCell}`);
    named.add(cls);
    const Class = exported[cls];
    assert.equal(typeof Class, "function", `@agentd/client exports ${cls}`);
    const code = /^`([a-z_]+)`$/.exec(codeCell!)?.[1] ?? "a_code_from_a_newer_daemon";
    const e = errorFromBody(418, Buffer.from(JSON.stringify({ error: { code, message: "m", field: "f" } })));
    assert.ok(e instanceof (Class as typeof agentd.AgentdError), `${code} is a ${cls}`);
    assert.ok(e instanceof agentd.AgentdError);
    assert.deepEqual([e.name, e.code, e.status, e.details], [cls, code, 418, { field: "f" }]);
  }
  assert.ok(named.has("UnknownError"), "the table names the fallback class");
  const classes = Object.entries(exported)
    .filter(([, v]) => typeof v === "function" && (v as { prototype?: unknown }).prototype instanceof agentd.AgentdError)
    .map(([k]) => k);
  assert.deepEqual(classes.filter((k) => !named.has(k)), [], "every exported error class is in the table");
});
