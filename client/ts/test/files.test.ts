// @agentd/client files and trees against the real daemon, and confined
// extraction against a fake daemon serving hostile archives.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  chmodSync, closeSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync,
  readlinkSync, rmSync, symlinkSync, truncateSync, utimesSync, writeFileSync,
} from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";

import { Client } from "../src/index.js";
import { BLOCK, encodeHeader } from "../src/tar.js";
import { Daemon, rejection, StallingProxy, TOKEN } from "./helpers.js";

let daemon: Daemon;
let c: Client;
let base: string;

before(async () => {
  daemon = await Daemon.start();
  c = await daemon.client();
  base = mkdtempSync(join(tmpdir(), "agentd-ts-files-"));
});
after(async () => {
  c.close();
  await daemon.stop();
  rmSync(base, { recursive: true, force: true });
});

function fresh(name: string): string {
  const d = join(base, name);
  mkdirSync(d, { recursive: true });
  return d;
}

describe("files", () => {
  test("write with an exact mode, read whole, lines and byte ranges", async () => {
    const p = join(fresh("rw"), "a.txt");
    const st = await c.writeFile(p, "one\ntwo\r\nthree\nfour", { mode: 0o640 });
    assert.deepEqual([st.type, st.size, st.mode], ["file", 19, 0o640]);
    assert.equal(lstatSync(p).mode & 0o7777, 0o640);
    assert.equal((await c.readFile(p)).toString(), "one\ntwo\r\nthree\nfour");
    assert.equal((await c.readFile(p, { startLine: 2, endLine: 3 })).toString(), "two\r\nthree\n");
    assert.equal((await c.readFile(p, { startLine: 3, endLine: 99 })).toString(), "three\nfour");
    assert.equal((await c.readFile(p, { startLine: 9 })).length, 0);
    assert.equal((await c.readFile(p, { range: { first: 4, last: 6 } })).toString(), "two");
    assert.equal((await rejection(c.readFile(p, { startLine: 3, endLine: 2 }))).code, "invalid_range");
    const e = await rejection(c.readFile(p, { range: { first: 100 } }));
    assert.deepEqual([e.code, e.status, e.details.size], ["range_not_satisfiable", 416, 19]);
  });

  test("a streamed write and a streamed read move large files", async () => {
    const data = Buffer.alloc(3 << 20);
    for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 12)) & 0xff;
    const p = join(fresh("big"), "sub", "big.bin");
    const st = await c.writeFile(p, Readable.from([data.subarray(0, 1 << 20), data.subarray(1 << 20)]), { parents: true });
    assert.equal(st.size, data.length);
    const parts: Buffer[] = [];
    for await (const chunk of c.readFileStream(p)) parts.push(chunk);
    assert.ok(Buffer.concat(parts).equals(data));
  });

  test("a read into a descriptor writes the file byte-identical and answers its size", async () => {
    const dir = fresh("tofd");
    // 0, 1, and a few MiB (many chunks, not a multiple of any buffer size).
    for (const size of [0, 1, (3 << 20) + 12345]) {
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (i * 29 + (i >> 10)) & 0xff;
      const p = join(dir, `src-${size}`);
      writeFileSync(p, data);
      const local = join(dir, `dst-${size}`);
      const fd = openSync(local, "w");
      const heard: number[] = [];
      try {
        assert.equal(await c.readFileToFd(p, fd, {}, (n) => heard.push(n)), size);
      } finally {
        closeSync(fd);
      }
      assert.ok(readFileSync(local).equals(data), `size ${size}`);
      assert.equal(heard.reduce((a, n) => a + n, 0), size);
    }
  });

  test("a read into an O_APPEND descriptor keeps what was there", async () => {
    const dir = fresh("tofd-append");
    const data = Buffer.alloc((2 << 20) + 7);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 9)) & 0xff;
    const p = join(dir, "src");
    writeFileSync(p, data);
    const local = join(dir, "log");
    writeFileSync(local, "prefix\n");
    const fd = openSync(local, "a");
    try {
      assert.equal(await c.readFileToFd(p, fd), data.length);
      assert.equal(await c.readFileToFd(p, fd, { range: { first: 10, last: 19 } }), 10);
    } finally {
      closeSync(fd);
    }
    assert.ok(readFileSync(local).equals(Buffer.concat([Buffer.from("prefix\n"), data, data.subarray(10, 20)])));
  });

  test("a read of a missing file into a descriptor is not_found and writes nothing", async () => {
    const dir = fresh("tofd-missing");
    const missing = join(dir, "missing");
    const local = join(dir, "dst");
    const fd = openSync(local, "w");
    try {
      const e = await rejection(c.readFileToFd(missing, fd));
      assert.deepEqual([e.code, e.status, e.details.path], ["not_found", 404, missing]);
    } finally {
      closeSync(fd);
    }
    assert.equal(lstatSync(local).size, 0);
  });

  test("a write from an open file sends it whole, or leaves the old file", async () => {
    const data = Buffer.alloc((3 << 20) + 999);
    for (let i = 0; i < data.length; i++) data[i] = (i * 13 + (i >> 11)) & 0xff;
    const dir = fresh("fromfd");
    const local = join(dir, "src.bin");
    writeFileSync(local, data);
    const fd = openSync(local, "r");
    try {
      const p = join(dir, "dst.bin");
      const st = await c.writeFileFromFd(p, fd, data.length, { mode: 0o600 });
      assert.deepEqual([st.size, st.mode], [data.length, 0o600]);
      assert.equal(st.etag, `"sha256:${createHash("sha256").update(data).digest("hex")}"`);
      assert.ok(readFileSync(p).equals(data));
      // Declared longer than the file: cut short, the old content stays.
      const cut = await rejection(c.writeFileFromFd(p, fd, data.length + 4096, { etag: false }));
      assert.equal(cut.code, "io_error");
      assert.match(cut.message, new RegExp(`ended at ${data.length} bytes`));
      assert.ok(readFileSync(p).equals(data));
      const untagged = await c.writeFileFromFd(join(dir, "b"), fd, 10, { etag: false });
      assert.equal(untagged.etag, undefined);
      assert.ok(readFileSync(join(dir, "b")).equals(data.subarray(0, 10)));
      assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".agentd-tmp")), []);
    } finally {
      closeSync(fd);
    }
  });

  test("a failing source leaves the old file untouched", async () => {
    const p = join(fresh("keep"), "keep.txt");
    await c.writeFile(p, "old");
    async function* broken() {
      yield Buffer.from("new data");
      throw new Error("the harness's disk failed");
    }
    await assert.rejects(c.writeFile(p, broken()), /disk failed/);
    assert.equal((await c.readFile(p)).toString(), "old");
  });

  test("a large write refused from its head arrives as the daemon's error", async () => {
    // Bodies over 1 MiB and streamed ones wait for "100 Continue": a refusal
    // the daemon makes from the head alone is not lost to the connection it
    // closes while the body would still be in flight.
    const stranger = new Client({ url: daemon.url, token: "wrong-token" });
    const p = join(fresh("refused"), "never");
    try {
      const big = Buffer.alloc(16 << 20, 120);
      for (const body of [big, Readable.from([big.subarray(0, 8 << 20), big.subarray(8 << 20)])]) {
        const e = await rejection(stranger.writeFile(p, body));
        assert.deepEqual([e.code, e.status], ["unauthorized", 401]);
      }
    } finally {
      stranger.close();
    }
    assert.equal(existsSync(p), false);
  });

  test("metadata operations and their errors", async () => {
    const root = fresh("meta");
    const d = join(root, "d", "e");
    assert.deepEqual([(await c.makeDir(d, { mode: 0o750, parents: true })).mode], [0o750]);
    assert.equal((await rejection(c.makeDir(d))).code, "already_exists");
    await c.writeFile(join(d, "f"), "12345");
    symlinkSync("f", join(d, "link"));
    assert.equal((await c.stat(join(d, "link"))).target, "f");
    assert.equal((await c.stat(join(d, "link"), true)).size, 5);
    assert.deepEqual((await c.listDir(d)).map((e) => e.path), [join(d, "f"), join(d, "link")]);
    assert.equal(await c.realpath(join(d, "link")), join(d, "f"));
    assert.equal((await c.rename(join(d, "f"), join(d, "g"))).path, join(d, "g"));
    assert.equal((await rejection(c.remove(join(root, "d")))).code, "directory_not_empty");
    assert.equal(await c.remove(join(root, "d"), true), 4);
    const nf = await rejection(c.readFile(join(root, "missing")));
    assert.deepEqual([nf.code, nf.status, nf.details.path], ["not_found", 404, join(root, "missing")]);
    assert.equal((await rejection(c.stat("relative"))).code, "invalid_request");
  });
});

function makeTree(root: string): void {
  mkdirSync(join(root, "src", "pkg"), { recursive: true });
  mkdirSync(join(root, "empty"));
  writeFileSync(join(root, "src", "pkg", "mod.py"), "print('hi')\n");
  writeFileSync(join(root, "run.sh"), "#!/bin/sh\n");
  chmodSync(join(root, "run.sh"), 0o751);
  writeFileSync(join(root, "big.bin"), Buffer.alloc(1 << 20, 7));
  linkSync(join(root, "big.bin"), join(root, "src", "hard.bin"));
  symlinkSync("pkg/mod.py", join(root, "src", "rel-link"));
  symlinkSync("/etc/hostname", join(root, "abs-link"));
  symlinkSync("does/not/exist", join(root, "dangling"));
  writeFileSync(Buffer.concat([Buffer.from(root + "/caf"), Buffer.from([0xe9, 0x2d, 0xff])]), "latin-1 name");
  const long = "n".repeat(120);
  mkdirSync(join(root, long, long), { recursive: true });
  writeFileSync(join(root, long, long, "deep.txt"), "long names");
  chmodSync(join(root, "empty"), 0o700);
  utimesSync(join(root, "run.sh"), 1600000000.25, 1600000000.25);
  utimesSync(join(root, "src", "pkg"), 1500000000.5, 1500000000.5);
}

function describeTree(root: string): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  const walk = (dir: Buffer, rel: string) => {
    for (const name of readdirSync(dir, { encoding: "buffer" }).sort(Buffer.compare)) {
      const p = Buffer.concat([dir, Buffer.from("/"), name]);
      const key = rel + "/" + name.toString("hex");
      const st = lstatSync(p);
      const entry: unknown[] = [st.mode];
      if (st.isSymbolicLink()) entry.push(readlinkSync(p, "buffer").toString("hex"));
      else entry.push(Math.round(st.mtimeMs));
      if (st.isFile()) entry.push(readFileSync(p).toString("hex").slice(0, 64), st.size, st.nlink);
      out[key] = entry;
      if (st.isDirectory()) walk(p, key);
    }
  };
  walk(Buffer.from(root), "");
  return out;
}

describe("trees", () => {
  for (const compress of ["none", "gzip"] as const) {
    test(`upload and download keep everything (${compress})`, async () => {
      const src = fresh("src-" + compress);
      makeTree(src);
      const remote = join(base, "remote-" + compress);
      const up = await c.uploadDir(src, remote, { compress, parents: true });
      assert.equal(up.entries, 14);
      assert.deepEqual(describeTree(remote), describeTree(src));
      const back = join(base, "back-" + compress);
      const down = await c.downloadDir(remote, back, { compress });
      assert.equal(down.entries, 14);
      assert.deepEqual(describeTree(back), describeTree(src));
      assert.equal(lstatSync(join(back, "big.bin")).ino, lstatSync(join(back, "src", "hard.bin")).ino);
      assert.deepEqual(readdirSync(back).filter((n) => n.startsWith(".agentd")), []);
    });
  }

  test("download merges into an existing directory and replaces symlinks without following them", async () => {
    const remote = fresh("merge-remote");
    mkdirSync(join(remote, "a"));
    writeFileSync(join(remote, "a", "f"), "from guest");
    const outside = fresh("merge-outside");
    const dest = fresh("merge-dest");
    mkdirSync(join(dest, "a"));
    writeFileSync(join(dest, "a", "kept"), "kept");
    symlinkSync(join(outside, "victim"), join(dest, "a", "f"));
    await c.downloadDir(remote, dest);
    assert.equal(lstatSync(join(dest, "a", "f")).isSymbolicLink(), false);
    assert.equal(readFileSync(join(dest, "a", "f"), "utf8"), "from guest");
    assert.equal(readFileSync(join(dest, "a", "kept"), "utf8"), "kept");
    assert.deepEqual(readdirSync(outside), []);
  });

  test("a source file that shrinks mid-upload fails locally and the daemon keeps nothing", async () => {
    const src = fresh("upfail");
    writeFileSync(join(src, "a-small"), "kept only if the whole tree arrives");
    const big = join(src, "b-shrinks");
    writeFileSync(big, "");
    truncateSync(big, 128 << 20); // sparse: far more than every socket buffer on the way holds
    const proxy = new StallingProxy(daemon.port, 1 << 20);
    const pc = new Client({ url: await proxy.listen(), token: TOKEN });
    const remote = join(base, "upfail-remote");
    try {
      const upload = pc.uploadDir(src, remote, { parents: true });
      const failed = rejection(upload);
      await proxy.stalled;
      truncateSync(big, 10);
      proxy.resume();
      const e = await failed;
      assert.deepEqual([e.code, e.status, e.details.path], ["io_error", 0, big]);
    } finally {
      pc.close();
      proxy.close();
    }
    // The daemon sees a request cut before its final chunk and removes its
    // staging and the directory parents=1 created, right after the cut.
    const deadline = Date.now() + 10000;
    while (existsSync(remote) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(existsSync(remote), false);
    assert.equal((await c.run(["true"])).exitCode, 0);
  });
});

// -- hostile archives -------------------------------------------------------------

function entry(name: string, typeflag: string, data = Buffer.alloc(0), linkname = "", mode = 0o644): Buffer {
  const h = encodeHeader({ name: Buffer.from(name), typeflag, mode, size: data.length, mtimeSec: 1600000000,
    linkname: Buffer.from(linkname) });
  const pad = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return Buffer.concat([h, data, pad]);
}
const END = Buffer.alloc(BLOCK * 2);

describe("hostile archives from a fake daemon", () => {
  let server: http.Server;
  let body: Buffer = Buffer.alloc(0);
  let cutHalf = false;
  let fake: Client;
  let dest: string;
  let outsideBase: string;

  before(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/v1/health") { // the client's version check on first use
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ status: "ok", version: "0.1.0", protocol: 1 }));
        return;
      }
      res.writeHead(200, { "Content-Type": "application/x-tar" });
      if (cutHalf) {
        res.write(body.subarray(0, body.length >> 1), () => res.socket?.destroy());
        return;
      }
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    fake = new Client({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: "t",
      maxAttempts: 2, backoffInitialMs: 1 });
  });
  after(() => {
    fake.close();
    server.close();
  });

  async function refused(archive: Buffer, want: string, reason?: RegExp): Promise<void> {
    outsideBase = fresh("hostile-" + Math.random().toString(16).slice(2));
    dest = join(outsideBase, "dest");
    mkdirSync(dest);
    body = archive;
    const e = await rejection(fake.downloadDir("/x", dest));
    assert.equal(e.code, want, e.message);
    if (reason) assert.match(String(e.details.reason), reason);
    assert.deepEqual(readdirSync(outsideBase), ["dest"]);
    assert.deepEqual(readdirSync(dest), []);
  }

  test("absolute names and .. are refused", async () => {
    await refused(Buffer.concat([entry(base + "/evil", "0", Buffer.from("x")), END]), "unsafe_path", /absolute/);
    await refused(Buffer.concat([entry("ok", "0", Buffer.from("x")), entry("../evil", "0", Buffer.from("x")), END]),
      "unsafe_path", /\.\./);
  });

  test("writing through a symlink is refused, whatever it points at", async () => {
    await refused(Buffer.concat([entry("link", "2", Buffer.alloc(0), base), entry("link/evil", "0", Buffer.from("x")), END]),
      "unsafe_path", /symlink/);
    await refused(Buffer.concat([entry("d/", "5"), entry("link", "2", Buffer.alloc(0), "d"),
      entry("link/f", "0", Buffer.from("x")), END]), "unsafe_path", /symlink/);
  });

  test("hard links must name earlier members; devices and FIFOs are refused", async () => {
    await refused(Buffer.concat([entry("h", "1", Buffer.alloc(0), "/etc/passwd"), END]), "unsafe_path", /hard link/);
    await refused(Buffer.concat([entry("h", "1", Buffer.alloc(0), "later"), entry("later", "0", Buffer.from("x")), END]),
      "unsafe_path", /hard link/);
    await refused(Buffer.concat([entry("dev", "3"), END]), "unsafe_path", /device/);
    await refused(Buffer.concat([entry("fifo", "6"), END]), "unsafe_path", /FIFO/);
  });

  test("truncated, corrupt and cut archives leave nothing", async () => {
    const two = Buffer.concat([entry("a", "0", Buffer.alloc(5000, 97)), entry("b", "0", Buffer.alloc(5000, 98)), END]);
    await refused(two.subarray(0, BLOCK + 2048), "invalid_archive");
    const corrupt = Buffer.from(two);
    corrupt[10] ^= 0xff;
    await refused(corrupt, "invalid_archive", /checksum/);
    await refused(gzipSync(two).subarray(0, 100), "invalid_archive");
    cutHalf = true;
    try {
      await refused(Buffer.concat([entry("a", "0", Buffer.alloc(50000, 97)), END]), "transport_error");
    } finally {
      cutHalf = false;
    }
  });

  test("a cut file body read into a descriptor is transport_error, not a short count", async () => {
    body = Buffer.alloc(200000, 99);
    cutHalf = true;
    const local = join(fresh("tofd-cut"), "dst");
    const fd = openSync(local, "w");
    try {
      assert.equal((await rejection(fake.readFileToFd("/x", fd))).code, "transport_error");
    } finally {
      cutHalf = false;
      closeSync(fd);
    }
    assert.ok(lstatSync(local).size <= body.length >> 1);
  });

  test("setuid bits are dropped unless asked for", async () => {
    const d = fresh("setuid");
    body = Buffer.concat([entry("s", "0", Buffer.from("x"), "", 0o4755), END]);
    await fake.downloadDir("/x", d);
    assert.equal(lstatSync(join(d, "s")).mode & 0o7777, 0o755);
    await fake.downloadDir("/x", d, { keepSetid: true });
    assert.equal(lstatSync(join(d, "s")).mode & 0o7777, 0o4755);
  });
});
