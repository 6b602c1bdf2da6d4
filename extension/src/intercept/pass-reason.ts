// Why a request went to the browser's own network stack instead of the helper: the one list of reasons, recorded
// with the request and counted per tab. What each means to the user, in plain words, is timings/left-to-browser.ts
// (whose Record<PassReason, string> tables make a reason added here without its words a type error).
export type PassReason =
  | "site_off" // the page's site is not enabled
  | "not_http" // not an http(s) URL
  | "method" // a method other than GET/HEAD: never pipelined or retried
  | "preflight" // a CORS preflight (the browser makes it itself)
  | "websocket"
  | "streaming" // an event stream
  | "range" // a range / media request (the browser's own partial fetches)
  | "local_document" // the page is on a private or loopback address: the browser loads it, to know its address space
  | "plain_http" // an http:// request to a host the browser was not seen reaching over http: its HTTPS upgrade (HSTS) applies
  | "private_target" // a private or loopback address asked for by a more public page
  | "blocked_address" // the helper refused a private address (address policy)
  | "login" // the site asked for a login (401, WWW-Authenticate) the request did not carry: the browser's prompt or stored credentials
  | "too_large" // the response is above the size a fulfil can carry
  | "memory_budget" // the bodies the extension already holds leave no room for this one (deliver/body-budget.ts)
  | "helper_missing" // the helper is not installed
  | "helper_incompatible" // the helper speaks another protocol version
  | "helper_unavailable" // the helper is not reachable (starting, crashed)
  | "helper_error" // the helper could not fetch it
  | "timeout" // the helper was too slow (no head, or the body stalled)
  | "proxy_configured" // the browser uses a proxy (its own, or the system's it follows): the helper would bypass it
  | "low_latency" // a fast link to this origin: pipelining cannot win
  | "browser_multiplexed" // the browser's own HTTP/2 (or HTTP/3) connection to this origin is warm: a fresh one cannot win
  | "browser_warm_connection"; // the browser's own HTTP/1.1 connection just carried a large response and is idle: warmer than the helper's
