// Whether a tab's request is a private (incognito) window's, as the extension knows it, in both browsers. Chromium's
// background is told asynchronously (tabs.onCreated, tabs.query at start-up, tabs.get at attach), so a tab's record
// can exist before any of them answered; Firefox's proxy.onRequest and webRequest details carry an optional
// `incognito` field. Either way the flag can be unknown, which is not "a normal window". Everything that writes or
// learns (the helper's disk cache, learned pages, origin memory; the timing records kept after a tab closes) treats
// an unknown flag as private: at worst a normal tab's first requests stay memory only, never a private tab's reach
// the disk. Nothing waits for the answer (a normal tab is not slowed): in Chromium whoever finds it unknown asks the
// browser, and the requests after the answer use it.

/** true: a private window's tab; false: a normal window's; null: not known yet. */
export type Incognito = boolean | null;

/** Whether a tab's requests are kept as a private window's (memory only, never learned): unknown counts as private,
 * whether the background has no answer yet (null) or a Firefox request's details lack the field (undefined). */
export function treatedPrivate(incognito: Incognito | undefined): boolean {
  return incognito !== false;
}

/** The flag once the browser answered `answer` (a failed lookup: the tab is gone or not ours to see, still unknown);
 * an answer never turns a known flag back to unknown. */
export function learned(current: Incognito, answer: boolean | undefined): Incognito {
  return answer ?? current;
}
