// The popup's first line: what lanefetch is doing on this tab, in words a person who never heard of pipelining
// understands, and a second line only when it adds something. Numbers only where they mean something: no
// "0 ms saved", no counts before anything was counted. Pure (the popup renders it; a unit test reads every case).
import type { HelperState } from "../../bridge/helper-state.js";
import { INSTALL_COMMAND } from "../../bridge/helper-state.js";
import type { PassReason } from "../../intercept/pass-reason.js";
import { LEFT_TO_BROWSER, REASON_IN_PLAIN_WORDS } from "../../timings/left-to-browser.js";
import type { TabCounts } from "../../timings/tab-counters.js";
import { formatMs } from "../format.js";

export type Tone = "good" | "quiet" | "bad";

export interface StateLine {
  headline: string;
  detail: string | null;
  tone: Tone;
}

export interface StateInput {
  helper: HelperState;
  /** The tab shows an http(s) page (a site lanefetch could take). */
  webPage: boolean;
  /** The tab's site is enabled (maybe switched off for the session). */
  siteOn: boolean;
  sessionOff: boolean;
  /** Why interception could not start, if it failed (shown in full by the popup's notice). */
  problem: string | null;
  counts: TabCounts;
}

/** Below this an estimate of time saved is noise a person could not notice: not shown. */
export const SAVED_WORTH_SHOWING_MS = 100;

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The reason most requests were left to the browser for (ties: the first counted). */
export function mainReason(passed: TabCounts["passed"]): PassReason | null {
  let best: PassReason | null = null;
  let most = 0;
  for (const [reason, n] of Object.entries(passed) as [PassReason, number][]) {
    if (n > most) [best, most] = [reason, n];
  }
  return best;
}

export function stateLine(s: StateInput): StateLine {
  if (!s.webPage) return { headline: "lanefetch works on web pages only", detail: null, tone: "quiet" };
  if (!s.siteOn) return { headline: "Off for this site", detail: "Switch it on to load this site through lanefetch.", tone: "quiet" };
  if (s.sessionOff) {
    return {
      headline: "Off until the browser restarts",
      detail: "You closed the debugging bar, which turns lanefetch off for this site for this session.",
      tone: "quiet",
    };
  }
  // Without a usable helper nothing is intercepted (tab-policy.ts): every page is left to the browser, untouched.
  if (s.helper.status === "not_installed") {
    return { headline: `Helper not installed — run \`${INSTALL_COMMAND}\``, detail: `Until then pages are ${LEFT_TO_BROWSER}, which loads them as it would without lanefetch.`, tone: "bad" };
  }
  if (s.helper.status === "incompatible") {
    return { headline: "The helper needs an update", detail: `${s.helper.message} Until then pages are ${LEFT_TO_BROWSER}.`, tone: "bad" };
  }
  if (s.problem !== null) return { headline: "Not working on this page", detail: null, tone: "bad" };

  const c = s.counts;
  const left = Object.values(c.passed).reduce((a, b) => a + b, 0);
  const total = c.accelerated + left;
  if (c.accelerated > 0) {
    const share = c.accelerated < total ? `${c.accelerated} of ${plural(total, "request")}` : total === 1 ? "the one request" : `all ${total} requests`;
    return {
      headline: `Faster: ${share} through lanefetch`,
      detail: c.savedMs >= SAVED_WORTH_SHOWING_MS ? `About ${formatMs(c.savedMs)} saved (estimate)` : null,
      tone: "good",
    };
  }
  if (total === 0) {
    if (s.helper.status === "disconnected") {
      return { headline: `The helper stopped — this page was ${LEFT_TO_BROWSER}`, detail: "It starts again by itself; the next page load goes through it.", tone: "bad" };
    }
    if (s.helper.status === "connecting" || s.helper.status === "idle") {
      return { headline: `The helper is starting — this page was ${LEFT_TO_BROWSER}`, detail: "Reload the page once it runs to load it through lanefetch.", tone: "quiet" };
    }
    return { headline: "On — reload the page to load it through lanefetch", detail: null, tone: "quiet" };
  }
  const reason = mainReason(c.passed);
  if (reason === "low_latency") {
    return {
      headline: "Not needed here: this connection is already fast",
      detail: `The browser loads this page itself; lanefetch helps where the connection is slow.`,
      tone: "quiet",
    };
  }
  return {
    headline: `All ${plural(total, "request")} ${LEFT_TO_BROWSER}`,
    detail: reason === null ? null : `Mostly because ${REASON_IN_PLAIN_WORDS[reason]}.`,
    tone: reason !== null && reason.startsWith("helper") ? "bad" : "quiet",
  };
}

/** The popup's breakdown: one line per reason, most first. */
export function reasonLines(passed: TabCounts["passed"]): { reason: PassReason; text: string }[] {
  return (Object.entries(passed) as [PassReason, number][])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => ({ reason, text: `${n} because ${REASON_IN_PLAIN_WORDS[reason]}` }));
}
