// Chromium: the protocol a racing tab's document came over (HTTP/1.1, h2, h3), read from the page itself.
//
// Theory: an origin's requests go to the browser's own connection when the browser reached it over h2/h3
// (browser-multiplexed.ts), and the helper's held TLS handshake goes on when it reached it over HTTP/1.1
// (preconnect-handshake.ts); both learn the protocol from CDP's Network.responseReceived. A tab whose attach raced
// its navigation (attach-race.ts) has no Network events until its page loaded (debugger-sessions.ts), and webRequest,
// which sees its document, writes an h2 answer's status line as HTTP/1.1 (document-arrival.ts). Unknown, every
// subresource of an h2 page went to the helper and waited in its queue behind the handshake its preconnect had held:
// a fresh helper's first load of an h2 page over `sat` took 6.3 s against the browser's 5.0 s (~0.8×). The page
// knows: its navigation timing entry's `nextHopProtocol` says what its document came over ("h2", "http/1.1", "h3";
// "" from the browser's cache or a service worker). So when a racing tab's document starts to arrive (webRequest's
// onResponseStarted), the tab is asked, through the debugger session it already has (`Runtime.evaluate`, no
// Network domain), until the entry is the new document's (before the commit it is the old page's, or none); requests
// of the page's origin that come meanwhile wait for the answer, at most WAIT_AT_MOST_MS (it came in 1–30 ms after
// the response started on loopback). What the page says only steers where its own requests go: a page that lies
// about it misleads nothing but its own acceleration. Pure apart from the injected `evaluate` and `sleep`.

import { originOf, withoutFragment } from "./origin-of.js";

/** Evaluated in the tab's main frame: [document URL, protocol] of its navigation entry, or null before it has one. */
export const NAVIGATION_ENTRY_EXPRESSION =
  '(() => { const e = performance.getEntriesByType("navigation")[0]; return e ? [e.name, e.nextHopProtocol] : null; })()';
/** Asked again this often until the entry is the new document's. */
export const ASK_EVERY_MS = 10;
/** Given up after this many questions (the commit follows the response's start by milliseconds; ~2 s of them). */
export const MAX_QUESTIONS = 200;
/** A request of the page's origin waits for the answer at most this long, then goes on as if none came. */
export const WAIT_AT_MOST_MS = 300;

/** What one evaluation says: the document's protocol, "again" (not committed yet), or "none" (it will not say). */
export type Reading = { protocol: string } | "again" | "none";

/** Reads one evaluation's value (`NAVIGATION_ENTRY_EXPRESSION`) for the document at `documentUrl`. */
export function readingOf(documentUrl: string, value: unknown): Reading {
  if (!Array.isArray(value) || value.length !== 2) return "again";
  const [name, protocol] = value as unknown[];
  if (typeof name !== "string" || typeof protocol !== "string") return "none";
  if (withoutFragment(name) !== withoutFragment(documentUrl)) return "again";
  // "" : the document came from the browser's cache or a service worker; its connection says nothing.
  return protocol === "" ? "none" : { protocol: protocol.toLowerCase() };
}

interface Question {
  origin: string;
  answer: Promise<string | null>;
}

/** A real timer's wait (tests inject their own). */
function timerSleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class NavigationProtocols {
  /** tabId → the question asked of its newest racing document. */
  private readonly asked = new Map<number, Question>();

  constructor(
    /** Evaluates NAVIGATION_ENTRY_EXPRESSION in the tab's main frame; rejects when the tab cannot be asked. */
    private readonly evaluate: (tabId: number) => Promise<unknown>,
    private readonly sleep: (ms: number) => Promise<void> = timerSleep,
  ) {}

  /** The racing tab's document at `documentUrl` started to arrive: asks the page until it says; resolves with the
   * protocol, or null (it did not say, or a newer document of the tab replaced the question). */
  ask(tabId: number, documentUrl: string): Promise<string | null> {
    const question: Question = { origin: originOf(documentUrl), answer: Promise.resolve(null) };
    this.asked.set(tabId, question);
    question.answer = this.questions(tabId, documentUrl, question).finally(() => {
      if (this.asked.get(tabId) === question) this.asked.delete(tabId);
    });
    return question.answer;
  }

  /** The unanswered question whose answer a request of the tab to `url` should wait for (same origin), or null. */
  pending(tabId: number, url: string): Promise<string | null> | null {
    const q = this.asked.get(tabId);
    return q !== undefined && q.origin === originOf(url) ? q.answer : null;
  }

  forget(tabId: number): void {
    this.asked.delete(tabId);
  }

  private async questions(tabId: number, documentUrl: string, question: Question): Promise<string | null> {
    for (let i = 0; i < MAX_QUESTIONS; i += 1) {
      if (i > 0) {
        await this.sleep(ASK_EVERY_MS);
        if (this.asked.get(tabId) !== question) return null;
      }
      let value: unknown;
      try {
        value = await this.evaluate(tabId);
      } catch {
        // The old document's context went away under the question (the commit): asked again in the new one.
        continue;
      }
      const reading = readingOf(documentUrl, value);
      if (reading === "none") return null;
      if (reading !== "again") return reading.protocol;
    }
    return null;
  }
}

/** Waits for `answer` at most `ms`: null when it did not come in time. */
export function atMost<T>(answer: Promise<T | null>, ms: number, sleep: (ms: number) => Promise<void> = timerSleep): Promise<T | null> {
  return Promise.race([answer, sleep(ms).then(() => null)]);
}
