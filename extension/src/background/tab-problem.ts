// The tab's problem (why interception could not start: an attach that failed, the debugging bar cancelled) after
// its top-level page committed. Pure: chromium-main.ts keeps the problem per tab and the popup shows it in full.

export interface CommittedPage {
  /** The page is on a site in force now (enabled, not switched off for the session). */
  onActiveSite: boolean;
  /** The tab's debugger session is attached. */
  attached: boolean;
  /** The page is left to the browser on purpose (its host known fast). */
  leftToBrowser: boolean;
}

export function problemAfterCommit(problem: string | null, page: CommittedPage): string | null {
  // lanefetch does not take this page: a problem of the tab's earlier page is not this one's (the popup would show
  // "could not intercept" or "you cancelled the debugging bar" on another site's page).
  if (!page.onActiveSite) return null;
  return page.attached || page.leftToBrowser ? null : problem;
}

/** The tab's problem when the user cancelled the debugging bar (the site is then off for the session). */
export const CANCELLED_BAR = "You cancelled the debugging bar: lanefetch is off for this site until you turn it on again.";

/** The problem the popup shows for the tab now: the cancelled bar's only while its site is still off for the session
 * (turned on again, "off until you turn it on again" would be false until the tab's next page). */
export function problemShown(problem: string | null, site: { sessionOff: boolean }): string | null {
  return problem === CANCELLED_BAR && !site.sessionOff ? null : problem;
}
