// Version negotiation (docs/PROTOCOL.md, "Compatibility"): the protocol
// major this client speaks, and the check of what a daemon's /v1/health
// says it speaks. A newer minor (added fields, routes, codes) is welcome;
// another major is refused with protocol_mismatch (ProtocolMismatch),
// naming both, as the C++ and Python clients do.
import { AgentdError, protocolError, protocolMismatch } from "./errors.js";

/** The protocol this client speaks: every route under /v1. */
export const PROTOCOL_MAJOR = 1;

/** The daemon's protocol major from a health document: 1, 1.3 or "1.3" are all major 1. */
export function protocolMajor(health: unknown): number | undefined {
  const p = (health as { protocol?: unknown } | null)?.protocol;
  if (typeof p === "number" && Number.isFinite(p) && p >= 0) return Math.floor(p);
  if (typeof p === "string") {
    const m = /^(\d{1,6})(\.\d{1,6})*$/.exec(p);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/** undefined when this client speaks the daemon's protocol, else the error to refuse it with. */
export function protocolRefusal(health: unknown, url: string): AgentdError | undefined {
  const major = protocolMajor(health);
  const doc = health as { protocol?: unknown; version?: unknown } | null;
  const version = typeof doc?.version === "string" ? doc.version : "unknown";
  const details = {
    daemon_protocol: doc?.protocol ?? null, daemon_version: version, client_protocol: PROTOCOL_MAJOR,
  };
  if (major === undefined) {
    return protocolError(`the daemon at ${url} answered /v1/health without a protocol version ` +
      `(version ${version}); this client speaks protocol ${PROTOCOL_MAJOR}`, details);
  }
  if (major !== PROTOCOL_MAJOR) {
    return protocolMismatch(`the daemon at ${url} speaks protocol ${String(doc?.protocol)} (agentd ${version}); ` +
      `this client speaks protocol ${PROTOCOL_MAJOR}`, details);
  }
  return undefined;
}
