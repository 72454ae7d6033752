// Confined, staged extraction of a tar into a local directory: the
// daemon's own upload rules (docs/PROTOCOL.md, "Trees: upload") applied on
// the client side, so a hostile or broken daemon cannot make the client
// write outside the target directory.
//
// - Absolute member names and any ".." component are refused.
// - Everything is created inside a fresh private staging directory
//   (".agentd-download-<hex>", mode 0700) in the target. Before a member is
//   created, every parent component inside the staging directory is checked
//   with lstat to be a real directory (a symlink or a file there refuses the
//   member: nothing is ever written through a symlink); leaves are created
//   with O_CREAT | O_EXCL | O_NOFOLLOW.
// - A hard link must name an earlier non-directory member of this archive.
// - Devices, FIFOs and other kinds are refused.
// - Only when the whole archive was accepted is it merged into the target
//   (a missing entry is renamed in; a directory meets a directory by
//   merging; anything else replaces what was there without following it).
//   A refusal, a malformed archive or a cut transfer removes the staging
//   directory.
//
// Not guaranteed: Node.js has no openat(2), so the checks are by path
// inside the private 0700 staging directory; another process of the same
// user could race them. The target directory itself is trusted. mtimes are
// restored through a double (about 0.25 us precision), not to the
// nanosecond.
import { constants, promises as fsp } from "node:fs";
import { randomBytes } from "node:crypto";

import { AgentdError, makeError } from "./errors.js";
import { ChunkReader, readTar, type TarEntryHeader } from "./tar.js";
import type { TreeStats } from "./types.js";

export interface ExtractOptions {
  /** Keep setuid/setgid on regular files (dropped by default, as the daemon does). */
  keepSetid?: boolean;
}

function unsafe(member: Buffer, reason: string): AgentdError {
  const name = member.toString("utf8");
  return makeError("unsafe_path", `archive member "${name}" refused: ${reason}`, 0,
    { member: name, reason });
}

/** The components of a relative member name, or undefined when it is unsafe. */
export function splitMember(name: Buffer): Buffer[] | undefined {
  if (!name.length || name[0] === 0x2f) return undefined;
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= name.length; i++) {
    if (i === name.length || name[i] === 0x2f) {
      const part = name.subarray(start, i);
      start = i + 1;
      if (!part.length || (part.length === 1 && part[0] === 0x2e)) continue;
      if (part.length === 2 && part[0] === 0x2e && part[1] === 0x2e) return undefined;
      parts.push(part);
    }
  }
  return parts;
}

const SLASH = Buffer.from("/");
const joinParts = (base: Buffer, parts: Buffer[]) =>
  Buffer.concat([base, ...parts.flatMap((p) => [SLASH, p])]);
const keyOf = (parts: Buffer[]) => parts.map((p) => p.toString("hex")).join("/");

async function lstatOrUndefined(p: Buffer) {
  try {
    return await fsp.lstat(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

class Extractor {
  readonly stats: TreeStats = { entries: 0, bytes: 0 };
  private readonly nondirs = new Set<string>();
  private readonly dirs = new Map<string, { parts: Buffer[]; mode: number; sec: number; nsec: number }>();

  constructor(private readonly stage: Buffer, private readonly opts: ExtractOptions) {}

  /** Checks (and creates) the parents of `parts` inside the staging directory. */
  private async parents(parts: Buffer[], member: Buffer, create: boolean): Promise<void> {
    for (let i = 1; i < parts.length; i++) {
      const p = joinParts(this.stage, parts.slice(0, i));
      const st = await lstatOrUndefined(p);
      if (st === undefined) {
        if (!create) throw unsafe(member, "hard link to something that is not an earlier member");
        await fsp.mkdir(p, { mode: 0o700 });
        const key = keyOf(parts.slice(0, i));
        if (!this.dirs.has(key)) this.dirs.set(key, { parts: parts.slice(0, i), mode: 0o755, sec: -1, nsec: 0 });
      } else if (!st.isDirectory()) {
        throw unsafe(member, "its path crosses a symlink or a non-directory");
      }
    }
  }

  /** Makes room for a member; true when an existing directory is kept (merged). */
  private async clear(path: Buffer, parts: Buffer[], keepDir: boolean): Promise<boolean> {
    const st = await lstatOrUndefined(path);
    if (!st) return false;
    if (keepDir && st.isDirectory()) return true;
    await fsp.rm(path, { recursive: true, force: true });
    const prefix = keyOf(parts);
    for (const k of [...this.nondirs]) if (k === prefix || k.startsWith(prefix + "/")) this.nondirs.delete(k);
    for (const k of [...this.dirs.keys()]) if (k === prefix || k.startsWith(prefix + "/")) this.dirs.delete(k);
    return false;
  }

  async entry(h: TarEntryHeader, data: () => AsyncGenerator<Buffer>): Promise<void> {
    const parts = splitMember(h.name);
    if (!parts) throw unsafe(h.name, 'absolute name or ".." component');
    if (h.type === "other") throw unsafe(h.name, "device, FIFO and socket entries are refused");
    this.stats.entries++;
    if (!parts.length) {
      if (h.type === "dir") return;
      throw unsafe(h.name, "a non-directory member names the target directory");
    }
    await this.parents(parts, h.name, true);
    const path = joinParts(this.stage, parts);
    const key = keyOf(parts);
    if (h.type === "dir") {
      if (!(await this.clear(path, parts, true))) await fsp.mkdir(path, { mode: 0o700 });
      this.dirs.set(key, { parts, mode: h.mode & 0o7777, sec: h.mtimeSec, nsec: h.mtimeNsec });
      return;
    }
    await this.clear(path, parts, false);
    if (h.type === "symlink") {
      await fsp.symlink(h.linkname, path);
      await fsp.lutimes(path, h.mtimeSec, h.mtimeSec + h.mtimeNsec / 1e9);
    } else if (h.type === "hardlink") {
      const target = splitMember(h.linkname);
      if (!target || !target.length || !this.nondirs.has(keyOf(target))) {
        throw unsafe(h.name, "hard link to something that is not an earlier member");
      }
      await this.parents(target, h.name, false);
      await fsp.link(joinParts(this.stage, target), path);
    } else {
      const fh = await fsp.open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL |
        constants.O_NOFOLLOW, 0o600);
      try {
        for await (const chunk of data()) {
          await fh.write(chunk);
          this.stats.bytes += chunk.length;
        }
        let mode = h.mode & 0o7777;
        if (!this.opts.keepSetid) mode &= ~0o6000;
        await fh.chmod(mode);
        await fh.utimes(h.mtimeSec, h.mtimeSec + h.mtimeNsec / 1e9);
      } finally {
        await fh.close();
      }
    }
    this.nondirs.add(key);
  }

  /** Directory modes and mtimes last, deepest first (read-only ones were filled). */
  async finishDirs(): Promise<void> {
    const all = [...this.dirs.values()].sort((a, b) => b.parts.length - a.parts.length);
    for (const d of all) {
      const p = joinParts(this.stage, d.parts);
      const st = await fsp.lstat(p);
      if (!st.isDirectory()) continue;
      await fsp.chmod(p, d.mode);
      if (d.sec >= 0) await fsp.utimes(p, d.sec, d.sec + d.nsec / 1e9);
    }
  }
}

/** Moves staged entries into place: directories merge, anything else replaces. */
async function merge(from: Buffer, to: Buffer): Promise<void> {
  for (const name of await fsp.readdir(from, { encoding: "buffer" })) {
    const src = joinParts(from, [name]);
    const dst = joinParts(to, [name]);
    const s = await fsp.lstat(src);
    const d = await lstatOrUndefined(dst);
    if (d && s.isDirectory() && d.isDirectory()) {
      await merge(src, dst);
      await fsp.chmod(dst, s.mode & 0o7777);
      await fsp.utimes(dst, s.atimeMs / 1000, s.mtimeMs / 1000);
      continue;
    }
    if (d && d.isDirectory() !== s.isDirectory()) await fsp.rm(dst, { recursive: true, force: true });
    await fsp.rename(src, dst);
  }
}

/** Extracts the tar read from `chunks` into `local`, confined and staged. */
export async function extractTree(chunks: AsyncIterable<Buffer>, local: string,
                                  opts: ExtractOptions = {}): Promise<TreeStats> {
  await fsp.mkdir(local, { recursive: true });
  const root = Buffer.from(await fsp.realpath(local));
  const stage = joinParts(root, [Buffer.from(".agentd-download-" + randomBytes(8).toString("hex"))]);
  await fsp.mkdir(stage, { mode: 0o700 });
  try {
    const ex = new Extractor(stage, opts);
    await readTar(new ChunkReader(chunks[Symbol.asyncIterator]()), (h, data) => ex.entry(h, data));
    await ex.finishDirs();
    await merge(stage, root);
    return ex.stats;
  } finally {
    await fsp.chmod(stage, 0o700).catch(() => undefined);
    await fsp.rm(stage, { recursive: true, force: true });
  }
}
