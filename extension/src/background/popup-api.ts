// Messages between the popup / options / timing pages and the background.
import type { HelperState } from "../bridge/helper-state.js";
import type { CacheStats } from "../generated/protocol.js";
import type { HttpsTabStatus } from "../proxy/https-sites.js";
import type { SiteRule } from "../sites/site-rule.js";
import type { TabCounts } from "../timings/tab-counters.js";
import type { PageLoad, PageLoadData, RequestRecord, TimingStore } from "../timings/timing-store.js";

export type PopupRequest =
  | { type: "lanefetch/status"; tabId: number }
  | { type: "lanefetch/timings"; tabId: number };

/** The timing pages: recent page loads (newest first, optionally of one tab), and one load with its records. */
export type TimingRequest =
  | { type: "lanefetch/page-loads"; tabId?: number }
  | { type: "lanefetch/page-load"; id: string };

export interface PageLoadsReply {
  loads: PageLoad[];
}

export interface PageLoadReply {
  data: PageLoadData | null;
}

export function isTimingRequest(message: unknown): message is TimingRequest {
  if (message === null || typeof message !== "object") return false;
  const m = message as Record<string, unknown>;
  if (m.type === "lanefetch/page-loads") return m.tabId === undefined || typeof m.tabId === "number";
  return m.type === "lanefetch/page-load" && typeof m.id === "string";
}

export interface TabStatus {
  tabId: number;
  url: string;
  /** The rule now covering the tab's page (enabled, maybe switched off for the session), if any. */
  rule: SiteRule | null;
  /** Switched off for this browser session because the user cancelled the debugging bar. */
  sessionOff: boolean;
  /** Whether the debugger is attached to the tab right now. */
  intercepting: boolean;
  /** Why interception could not start, if it failed. */
  problem: string | null;
  /** Firefox, https:// page: the site's HTTPS acceleration (absent in Chromium, which needs none). */
  https?: HttpsTabStatus;
}

export interface StatusReply {
  helper: HelperState;
  tab: TabStatus;
  counts: TabCounts;
  timeSavedModel: string;
}

export interface TimingsReply {
  records: RequestRecord[];
}

export function isPopupRequest(message: unknown): message is PopupRequest {
  if (message === null || typeof message !== "object") return false;
  const m = message as Record<string, unknown>;
  return (m.type === "lanefetch/status" || m.type === "lanefetch/timings") && typeof m.tabId === "number";
}

/** Answers the timing pages' and the popup's questions about recorded timings at once (the store is in memory:
 * nothing to wait for); false when the message is none of them. */
export function answerTimingRequest(message: unknown, timings: TimingStore, sendResponse: (reply: unknown) => void): boolean {
  if (isTimingRequest(message)) {
    if (message.type === "lanefetch/page-loads") sendResponse({ loads: timings.pageLoads(message.tabId) } satisfies PageLoadsReply);
    else sendResponse({ data: timings.pageLoad(message.id) } satisfies PageLoadReply);
    return true;
  }
  if (isPopupRequest(message) && message.type === "lanefetch/timings") {
    sendResponse({ records: timings.forTab(message.tabId) } satisfies TimingsReply);
    return true;
  }
  return false;
}

/** The options page asks about (or clears) the helper's HTTP cache. */
export interface CacheRequest {
  type: "lanefetch/cache";
  action: "stats" | "clear";
}

export interface CacheReply {
  /** The helper's answer, or null when it could not be asked (then `helper` says why). */
  stats: CacheStats | null;
  helper: HelperState;
}

export function isCacheRequest(message: unknown): message is CacheRequest {
  if (message === null || typeof message !== "object") return false;
  const m = message as Record<string, unknown>;
  return m.type === "lanefetch/cache" && (m.action === "stats" || m.action === "clear");
}
