// The one name for a request lanefetch did not take ("left to the browser": the browser fetched it itself, as without
// lanefetch) and every reason for it in words a person who never heard of pipelining understands. The popup, the
// timing page, the copied summary and the HAR all say it this way; intercept/pass-reason.ts keeps the engineers'
// wording for logs. Pure.
import type { PassReason } from "../intercept/pass-reason.js";

export const LEFT_TO_BROWSER = "left to the browser";

/** Why, completing "Left to the browser because …" (lower case, no full stop). */
export const REASON_IN_PLAIN_WORDS: Record<PassReason, string> = {
  site_off: "lanefetch is off for this site",
  not_http: "it is not a web address (http or https)",
  method: "it sends data to the site (lanefetch only speeds up downloads)",
  preflight: "it is a permission check the browser makes itself",
  websocket: "it is a live two-way connection",
  streaming: "it is a live stream of updates",
  range: "it is audio, video or part of a file",
  local_document: "the page is on this computer or the local network",
  plain_http: "it was sent over plain http, so that the browser's own HTTPS upgrade (HSTS) applies",
  private_target: "a public page asked for something on the local network",
  blocked_address: "it goes to a local address the helper does not reach for web pages",
  login: "the site asked for a login, which the browser asks you for (or sends the one it keeps)",
  too_large: "the file is too large to hand over from the helper",
  memory_budget: "lanefetch was already holding its limit of downloaded data (64 MiB) for other requests",
  helper_missing: "the helper is not installed",
  helper_incompatible: "the helper needs an update",
  helper_unavailable: "the helper was not running",
  helper_error: "the helper could not load it",
  timeout: "the helper took too long",
  proxy_configured: "the browser uses a proxy (its own setting, or the system's it follows)",
  low_latency: "the connection to this site is already fast",
  browser_multiplexed: "the browser already has a fast (HTTP/2) connection to this site",
  browser_warm_connection: "the browser's own connection to this site was already up to speed and free",
};

/** A few words for a narrow column (the timing page's badge); the full reason is in the row's details. */
export const REASON_SHORT: Record<PassReason, string> = {
  site_off: "site off", not_http: "not http", method: "sends data", preflight: "permission check", websocket: "live connection",
  streaming: "live stream", range: "media / part", local_document: "local page", plain_http: "plain http", private_target: "local address",
  blocked_address: "local address", login: "login", too_large: "too large", memory_budget: "memory limit",
  helper_missing: "no helper", helper_incompatible: "old helper",
  helper_unavailable: "helper down", helper_error: "helper failed", timeout: "helper slow", proxy_configured: "proxy set",
  low_latency: "already fast", browser_multiplexed: "browser's h2",
  browser_warm_connection: "browser's warm link",
};

export function reasonInPlainWords(reason: string | null | undefined): string {
  return (reason !== null && reason !== undefined && (REASON_IN_PLAIN_WORDS as Record<string, string>)[reason]) || "no reason recorded";
}

export function reasonShort(reason: string | null | undefined): string {
  return (reason !== null && reason !== undefined && (REASON_SHORT as Record<string, string>)[reason]) || "";
}
