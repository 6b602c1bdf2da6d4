// Light run-time checks of messages from the helper (the schema is the contract; this guards the dispatch).
import type { ToExtension } from "../generated/protocol.js";

const TYPES = new Set([
  "hello", "head", "body", "end", "error", "timing", "batch_done", "pong", "cache_stats", "interfaces_state", "proxy_ready", "proxied", "https_state",
  "origin_rtt", "working", "page_report", "flight_plan",
]);

export function asToExtension(message: unknown): ToExtension | null {
  if (message === null || typeof message !== "object") return null;
  const m = message as Record<string, unknown>;
  if (typeof m.type !== "string" || !TYPES.has(m.type)) return null;
  if (["head", "body", "end", "timing", "proxied"].includes(m.type) && typeof m.id !== "string") return null;
  if (["proxy_ready", "proxied"].includes(m.type) && typeof m.context_id !== "string") return null;
  if (m.type === "body" && typeof m.data !== "string") return null;
  if ((m.type === "batch_done" || m.type === "working") && typeof m.batch_id !== "string") return null;
  if (m.type === "https_state" && !Array.isArray(m.sites)) return null;
  if (m.type === "origin_rtt" && (typeof m.origin !== "string" || typeof m.rtt_ms !== "number")) return null;
  if (m.type === "flight_plan" && (typeof m.url !== "string" || typeof m.flight !== "boolean")) return null;
  if (m.type === "page_report" && (typeof m.page !== "string" || typeof m.flight !== "boolean")) return null;
  return message as ToExtension;
}
