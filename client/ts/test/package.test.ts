// The package's shape: ESM with .d.ts types, Node 20+, and zero runtime
// dependencies (the emitted modules import only node: built-ins and each other).
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageDir = process.env.AGENTD_TS_PACKAGE_DIR ?? fileURLToPath(new URL("../..", import.meta.url));
const emitted = fileURLToPath(new URL("../src", import.meta.url));

test("package.json declares an ES module with types, Node 20+, and no runtime dependencies", () => {
  const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  assert.equal(pkg.name, "@agentd/client");
  assert.equal(pkg.type, "module");
  assert.deepEqual(pkg.exports["."], { types: "./dist/src/index.d.ts", import: "./dist/src/index.js" });
  assert.equal(pkg.engines.node, ">=20");
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.peerDependencies, undefined);
  assert.equal(pkg.optionalDependencies, undefined);
  assert.deepEqual(Object.keys(pkg.devDependencies).sort(), ["@types/node", "typescript"]);
});

test("every emitted module has its .d.ts and imports only node: built-ins and its siblings", () => {
  const modules = readdirSync(emitted).filter((n) => n.endsWith(".js"));
  assert.ok(modules.includes("index.js"));
  for (const name of modules) {
    assert.ok(existsSync(join(emitted, name.replace(/\.js$/, ".d.ts"))), `${name} has no .d.ts`);
    const text = readFileSync(join(emitted, name), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, ""); // comments may show examples
    // Import and export statements (not a string that happens to end in "from").
    const specs = [...text.matchAll(
      /^\s*(?:import|export)\b[^"';]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/gm)]
      .map((m) => m[1] ?? m[2] ?? m[3]!);
    if (name === "index.js") assert.ok(specs.includes("./client.js"), "the import scan finds imports");
    for (const spec of specs) {
      assert.ok(spec.startsWith("node:") || /^\.\/[a-z_]+\.js$/.test(spec), `${name} imports ${spec}`);
    }
  }
});
