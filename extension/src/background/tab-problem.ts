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
