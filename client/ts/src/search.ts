// Search and glob calls (docs/PROTOCOL.md, "Search" and "Glob"): the NDJSON
// stream of GET /v1/fs/search read line by line (a stream that ends
// without its summary throws), and GET /v1/fs/glob's sorted stats.
import { protocolError } from "./errors.js";
import { FileCalls } from "./files.js";
import { bodyChunks } from "./transport.js";
import type { FileStat } from "./types.js";
import { fileStatFromWire } from "./wire.js";

const q = encodeURIComponent;
/** One NDJSON line: a match and its context lines, each cut at max_bytes_per_line (at most 1 MiB). */
const MAX_LINE = 64 << 20;
/** The whole answer: max_bytes of match lines (default 16 MiB), JSON-escaped, plus context. */
const answerLimit = (maxBytes = 16 << 20) => 8 * maxBytes + (64 << 20);

/** What search and glob share; absent values take the daemon's defaults. */
export interface WalkOptions {
  /** Skip files and directories matching these patterns ("Pattern rules"). */
  exclude?: string[];
  hidden?: boolean;
  /** false: do not read .gitignore, .ignore or .git/info/exclude. */
  gitignore?: boolean;
  follow?: boolean;
  maxResults?: number;
  timeoutMs?: number;
}

export interface SearchOptions extends WalkOptions {
  fixed?: boolean;
  ignoreCase?: boolean;
  /** Only files matching one of these patterns. */
  glob?: string[];
  context?: number;
  maxBytes?: number;
  maxBytesPerLine?: number;
  /** Sees each match as it arrives. */
  onMatch?: (m: SearchMatch) => void;
}

export interface SearchMatch {
  type: "match";
  path: string;
  /** 1-based: usable as startLine of readFile. */
  line: number;
  /** 1-based byte offset of the first match. */
  column: number;
  text: string;
  cut: boolean;
  invalidUtf8?: number[];
  before?: string[];
  after?: string[];
}

export interface SearchSummary {
  type: "summary";
  filesScanned: number;
  matches: number;
  binarySkipped: number;
  unreadable: number;
  truncated: boolean;
  bound: "results" | "bytes" | "time" | null;
  elapsedMs: number;
}

export interface SearchResult {
  matches: SearchMatch[];
  summary: SearchSummary;
}

export interface GlobResult {
  entries: FileStat[];
  truncated: boolean;
  bound: "results" | "time" | null;
  elapsedMs: number;
}

function matchFromWire(w: Record<string, unknown>): SearchMatch {
  const m: SearchMatch = {
    type: "match", path: w.path as string, line: w.line as number, column: w.column as number,
    text: w.text as string, cut: w.cut as boolean,
  };
  if (w.invalid_utf8 !== undefined) m.invalidUtf8 = w.invalid_utf8 as number[];
  if (w.before !== undefined) m.before = w.before as string[];
  if (w.after !== undefined) m.after = w.after as string[];
  return m;
}

function summaryFromWire(w: Record<string, unknown>): SearchSummary {
  return {
    type: "summary", filesScanned: w.files_scanned as number, matches: w.matches as number,
    binarySkipped: w.binary_skipped as number, unreadable: w.unreadable as number, truncated: w.truncated as boolean,
    bound: (w.bound ?? null) as SearchSummary["bound"], elapsedMs: w.elapsed_ms as number,
  };
}

function walkQuery(o: WalkOptions): string {
  let s = "";
  for (const e of o.exclude ?? []) s += `&exclude=${q(e)}`;
  if (o.hidden) s += "&hidden=1";
  if (o.gitignore === false) s += "&gitignore=0";
  if (o.follow) s += "&follow=1";
  if (o.maxResults !== undefined) s += `&max_results=${o.maxResults}`;
  if (o.timeoutMs !== undefined) s += `&timeout_ms=${o.timeoutMs}`;
  return s;
}

export class SearchCalls extends FileCalls {
  /** GET /v1/fs/search: matching lines below `path` (or in the file `path`), then the summary. */
  async search(path: string, pattern: string, o: SearchOptions = {}): Promise<SearchResult> {
    let target = `/v1/fs/search?path=${q(path)}&pattern=${q(pattern)}`;
    if (o.fixed) target += "&fixed=1";
    if (o.ignoreCase) target += "&ignore_case=1";
    for (const g of o.glob ?? []) target += `&glob=${q(g)}`;
    if (o.context) target += `&context=${o.context}`;
    if (o.maxBytes !== undefined) target += `&max_bytes=${o.maxBytes}`;
    if (o.maxBytesPerLine !== undefined) target += `&max_bytes_per_line=${o.maxBytesPerLine}`;
    target += walkQuery(o);
    const res = await this.t.open({ method: "GET", path: target, idempotent: true });
    const matches: SearchMatch[] = [];
    let summary: SearchSummary | undefined;
    let pending: Buffer = Buffer.alloc(0);
    try {
      let total = 0;
      const limit = answerLimit(o.maxBytes);
      for await (const chunk of bodyChunks(res)) {
        total += chunk.length;
        if (total > limit) throw protocolError(`the search answer is larger than ${limit} bytes`, { limit });
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        let start = 0;
        for (let nl = pending.indexOf(10, start); nl >= 0; nl = pending.indexOf(10, start)) {
          let doc: Record<string, unknown>;
          try {
            doc = JSON.parse(pending.subarray(start, nl).toString("utf8")) as Record<string, unknown>;
          } catch (e) {
            throw protocolError(`a search line is not JSON: ${(e as Error).message}`);
          }
          start = nl + 1;
          if (doc?.type === "match") {
            const m = matchFromWire(doc);
            matches.push(m);
            o.onMatch?.(m);
          } else if (doc?.type === "summary") {
            summary = summaryFromWire(doc);
          }
        }
        pending = pending.subarray(start);
        if (pending.length > MAX_LINE) throw protocolError(`a search line is longer than ${MAX_LINE} bytes`, { limit: MAX_LINE });
      }
    } finally {
      res.destroy();
    }
    if (!summary || pending.length) throw protocolError("the search stream ended without its summary line");
    return { matches, summary };
  }

  /** GET /v1/fs/glob: entries below `path` whose relative path matches `pattern`, sorted. */
  async glob(path: string, pattern: string, o: WalkOptions = {}): Promise<GlobResult> {
    const w = await this.json<Record<string, unknown>>("GET",
      `/v1/fs/glob?path=${q(path)}&pattern=${q(pattern)}${walkQuery(o)}`, undefined, true);
    return {
      entries: Array.isArray(w.entries) ? w.entries.map(fileStatFromWire) : [],
      truncated: w.truncated as boolean, bound: (w.bound ?? null) as GlobResult["bound"], elapsedMs: w.elapsed_ms as number,
    };
  }
}
