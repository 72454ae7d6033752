// The package's shape: ESM with .d.ts types, Node 20+, and zero runtime
// dependencies (the emitted modules import only node: built-ins and each
// other); and `npm pack` builds it so a fresh project installs and uses it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Daemon, TOKEN } from "./helpers.js";

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

/** Runs `cmd` to its end: its stdout, or a failure naming what it printed. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, env, timeout: 300_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(" ")}: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

test("npm packs the package (the build runs), and a fresh project installs it, imports it and calls a daemon", async () => {
  const tmp = mkdtempSync(join(tmpdir(), "agentd-ts-install-"));
  const daemon = await Daemon.start();
  (await daemon.client()).close(); // bootstraps TOKEN
  try {
    // A copy of the package's sources (not its built dist/), with its dev
    // dependencies, so packing builds it as `npm pack` / `npm install` would.
    const source = join(tmp, "source");
    mkdirSync(source);
    for (const name of ["package.json", "tsconfig.json", "README.md", "src"]) {
      cpSync(join(packageDir, name), join(source, name), { recursive: true });
    }
    symlinkSync(join(packageDir, "node_modules"), join(source, "node_modules"));
    const env = { ...process.env, npm_config_cache: join(tmp, "npm-cache"), npm_config_update_notifier: "false" };
    const tarball = (await run("npm", ["pack", "--silent", "--pack-destination", tmp], source, env)).trim().split("\n").pop()!;
    assert.match(tarball, /^agentd-client-\d+\.\d+\.\d+\.tgz$/);

    const project = join(tmp, "project");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "fresh", version: "1.0.0", private: true, type: "module" }));
    await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(tmp, tarball)], project, env);
    const installed = join(project, "node_modules", "@agentd", "client");
    assert.equal(realpathSync(installed), installed, "installed as files, not a link to the sources");
    writeFileSync(join(project, "main.mjs"), [
      'import { Client } from "@agentd/client";',
      "const c = new Client({ url: process.argv[2], token: process.argv[3] });",
      'const r = await c.run(["echo", "from a fresh project"]);',
      "console.log(r.exitCode, r.stdout.toString().trim());",
      "c.close();",
    ].join("\n"));
    const out = await run(process.execPath, ["main.mjs", daemon.url, TOKEN], project);
    assert.equal(out, "0 from a fresh project\n");
  } finally {
    await daemon.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
});
