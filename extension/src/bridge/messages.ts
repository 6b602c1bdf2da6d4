// Light run-time checks of messages from the helper (the schema is the contract; this guards the dispatch).
import type { ToExtension } from "../generated/protocol.js";

const TYPES = new Set([
  "hello", "head", "body", "end", "error", "timing", "batch_done", "pong", "cache_stats", "interfaces_state", "proxy_ready", "proxied", "https_state",
  "origin_rtt", "working", "page_report", "flight_plan", "system_proxy",
]);

/** Why a head cannot be delivered as it is (what fulfilling it reads), or null. */
function headProblem(m: Record<string, unknown>): string | null {
  if (typeof m.status !== "number" || !Number.isInteger(m.status) || m.status < 200 || m.status > 999) return "its status is not 200-999";
  if (typeof m.reason !== "string") return "its reason is not text";
  if (typeof m.decoded !== "boolean") return "its decoded is not a boolean";
  const fields = m.headers;
  if (!Array.isArray(fields)) return "its header fields are not a list";
  const pair = (f: unknown): boolean => Array.isArray(f) && f.length === 2 && typeof f[0] === "string" && typeof f[1] === "string";
  if (!fields.every(pair)) return "a header field is not a [name, value] pair of text";
  return null;
}

/**
 * The message as the dispatch may take it, or null (dropped). A head of a request whose fields fulfilling would
 * trip over becomes that request's error: the browser then fetches it itself, never waiting on a response that
 * cannot be delivered.
 */
export function asToExtension(message: unknown): ToExtension | null {
  if (message === null || typeof message !== "object") return null;
  const m = message as Record<string, unknown>;
  if (typeof m.type !== "string" || !TYPES.has(m.type)) return null;
  if (["head", "body", "end", "timing", "proxied"].includes(m.type) && typeof m.id !== "string") return null;
  if (m.type === "head" && typeof m.id === "string") {
    const problem = headProblem(m);
    if (problem !== null) return { type: "error", id: m.id, code: "bad_message", message: `the helper's response head is malformed: ${problem}` };
  }
  if (["proxy_ready", "proxied"].includes(m.type) && typeof m.context_id !== "string") return null;
  if (m.type === "body" && typeof m.data !== "string") return null;
  if ((m.type === "batch_done" || m.type === "working") && typeof m.batch_id !== "string") return null;
  if (m.type === "https_state" && !Array.isArray(m.sites)) return null;
  if (m.type === "origin_rtt" && (typeof m.origin !== "string" || typeof m.rtt_ms !== "number")) return null;
  if (m.type === "flight_plan" && (typeof m.url !== "string" || typeof m.flight !== "boolean")) return null;
  if (m.type === "page_report" && (typeof m.page !== "string" || typeof m.flight !== "boolean")) return null;
  if (m.type === "system_proxy" && [m.system_proxy, m.wpad].some((v) => v !== undefined && typeof v !== "string")) return null;
  return message as ToExtension;
}
