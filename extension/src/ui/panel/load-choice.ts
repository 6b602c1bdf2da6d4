// Which page load the timing view shows, decided from the loads the background still keeps (newest first) at each
// poll. The user's choice holds while its load is kept; once it is not (its private tab closed, or newer loads pushed
// it out of the bounded store) the choice is forgotten and the view follows the newest load again: in DevTools, the
// inspected tab's current one. With no load left the view is emptied, never left showing the rows of a load that is
// gone (the page kept rendering what it had, and its HAR export saved a load the background no longer had).
import type { PageLoad } from "../../timings/timing-store.js";

/** What the view holds now: the load rendered and the version it was rendered at. */
export type ShownLoad = Pick<PageLoad, "id" | "version">;

export type LoadChoice =
  /** Nothing to show: empty the view. `gone`: a load was shown and is no longer kept. */
  | { kind: "empty"; chosen: string | null; gone: boolean }
  /** The shown load, unchanged since it was rendered: nothing to do. */
  | { kind: "same"; id: string; chosen: string | null }
  /** Fetch and render this load (another one, or the shown one changed). */
  | { kind: "load"; id: string; chosen: string | null };

/**
 * `loads`: the kept loads, newest first; `chosen`: the load the user picked (null: follow the newest); `shown`: what
 * the view renders now. The answer's `chosen` is the choice to keep (null once its load is gone).
 */
export function chooseLoad(loads: readonly ShownLoad[], chosen: string | null, shown: ShownLoad | null): LoadChoice {
  const kept = chosen === null ? undefined : loads.find((l) => l.id === chosen);
  const keep = kept === undefined ? null : chosen;
  const target = kept ?? loads[0];
  if (target === undefined) return { kind: "empty", chosen: keep, gone: shown !== null };
  if (shown !== null && shown.id === target.id && shown.version === target.version) return { kind: "same", id: target.id, chosen: keep };
  return { kind: "load", id: target.id, chosen: keep };
}

/** What the emptied view says. */
export function emptyText(gone: boolean, inDevtools: boolean): string {
  if (gone) {
    return "The page load shown is no longer kept (its private tab closed, or newer page loads took its place)." +
      (inDevtools ? " The tab's next page load of an enabled site shows here." : "");
  }
  return inDevtools
    ? "No page load of this tab recorded yet: load a page of a site you enabled in lanefetch."
    : "No page loads recorded yet: open a page of a site you enabled in lanefetch.";
}
