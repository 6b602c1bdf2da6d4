// Which paused requests the helper takes, and why the others go to the browser (Fetch.continueRequest).
import { addressSpaceOfUrl, mayReach, type AddressSpace } from "../sites/address-space.js";
import { headerValue, type PausedRequest } from "./paused-request.js";
import type { PassReason } from "./pass-reason.js";
import { plainHttpAllowed } from "./plain-http.js";

export interface PageContext {
  /** Whether the top-level page's site is enabled (and not switched off for the session). */
  siteActive: boolean;
  addressSpace: AddressSpace;
  /** Hosts whose plain-http requests are the browser's own kind here: those of the requesting page's and frame's
   * documents the browser loaded over http (plain-http.ts: plainHttpHosts). Any other http:// request could be one
   * the browser upgrades to https (HSTS) after the pause. */
  plainHttpHosts: readonly string[];
}

export type Decision = { take: true } | { take: false; reason: PassReason };

export function decide(request: PausedRequest, page: PageContext): Decision {
  if (!page.siteActive) return { take: false, reason: "site_off" };
  const type = request.cdpResourceType.toLowerCase();
  if (type === "preflight" || request.method === "OPTIONS") return { take: false, reason: "preflight" };
  if (type === "websocket") return { take: false, reason: "websocket" };
  if (request.method !== "GET" || request.hasBody) return { take: false, reason: "method" };
  const target = addressSpaceOfUrl(request.url);
  if (target === null) return { take: false, reason: "not_http" };
  if (type === "eventsource" || /^text\/event-stream\b/i.test(headerValue(request.headers, "accept") ?? "")) {
    return { take: false, reason: "streaming" };
  }
  // Chromium gives a fulfilled document no IP address, so it counts as public for Local Network Access: every
  // request it then makes to this machine or the LAN by itself (preflights, pass-throughs) would be refused.
  if (type === "document" && target !== "public") return { take: false, reason: "local_document" };
  if (type === "media" || headerValue(request.headers, "range") !== undefined) return { take: false, reason: "range" };
  if (!mayReach(page.addressSpace, target)) return { take: false, reason: "private_target" };
  // Paused before Chromium applies HSTS: only hosts the browser itself reached over http here (plain-http.ts).
  if (!plainHttpAllowed(request.url, page.plainHttpHosts)) return { take: false, reason: "plain_http" };
  return { take: true };
}
