// Why a request went to the browser's own network stack instead of the helper (shown in the popup's counters).
export const PASS_REASONS = {
  site_off: "site not enabled",
  not_http: "not an http(s) URL",
  method: "method other than GET",
  preflight: "CORS preflight",
  websocket: "WebSocket",
  streaming: "event stream",
  range: "range / media request",
  local_document: "page on a private or loopback address (the browser loads it, to know its address space)",
  private_target: "private or loopback address from a more public page",
  blocked_address: "helper refused a private address",
  too_large: "response above the size limit",
  helper_missing: "helper not installed",
  helper_incompatible: "helper version incompatible",
  helper_unavailable: "helper not reachable",
  helper_error: "helper could not fetch it",
  timeout: "helper too slow (timeout)",
  proxy_configured: "browser uses a proxy",
  low_latency: "fast link to this origin: pipelining cannot win",
  browser_multiplexed: "the browser's own HTTP/2 connection to this origin is warm: a fresh one cannot win",
} as const;

export type PassReason = keyof typeof PASS_REASONS;
