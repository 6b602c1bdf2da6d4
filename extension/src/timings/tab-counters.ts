// Per-tab counters of the current page: accelerated, passed through (by reason), bytes, estimated time saved. Each
// page the tab shows is numbered (page()): a request's counts given with the number of the page that asked for it are
// dropped once the tab went on to another page, so an answer that comes after a reload of the same URL is not counted
// for the reloaded page.
import type { PassReason } from "../intercept/pass-reason.js";

export interface TabCounts {
  pageUrl: string;
  accelerated: number;
  passed: Partial<Record<PassReason, number>>;
  bytes: number;
  savedMs: number;
}

/** The page number given with the counts of a request no tab's page made (a shared worker's): never counted. */
export const NOT_COUNTED = -1;

export function emptyCounts(pageUrl: string): TabCounts {
  return { pageUrl, accelerated: 0, passed: {}, bytes: 0, savedMs: 0 };
}

export class TabCounters {
  private readonly tabs = new Map<number, TabCounts>();
  /** Each tab's current page, numbered (0: none begun). */
  private readonly pages = new Map<number, number>();
  private pageCounter = 0;

  /** A new top-level page committed in the tab: start counting afresh. */
  newPage(tabId: number, pageUrl: string): void {
    this.tabs.set(tabId, emptyCounts(pageUrl));
    this.pageCounter += 1;
    this.pages.set(tabId, this.pageCounter);
  }

  /** The number of the tab's current page, to give with the counts of a request answered later. */
  page(tabId: number): number {
    return this.pages.get(tabId) ?? 0;
  }

  /** Whether counts given for `page` (none given: the current page) are the current page's. */
  private current(tabId: number, page: number | undefined): boolean {
    return page === undefined || page === this.page(tabId);
  }

  private of(tabId: number): TabCounts {
    let counts = this.tabs.get(tabId);
    if (!counts) {
      counts = emptyCounts("");
      this.tabs.set(tabId, counts);
    }
    return counts;
  }

  accelerated(tabId: number, bytes: number, page?: number): void {
    if (!this.current(tabId, page)) return;
    const c = this.of(tabId);
    c.accelerated += 1;
    c.bytes += bytes;
  }

  passed(tabId: number, reason: PassReason, page?: number): void {
    if (!this.current(tabId, page)) return;
    const c = this.of(tabId);
    c.passed[reason] = (c.passed[reason] ?? 0) + 1;
  }

  saved(tabId: number, ms: number, page?: number): void {
    if (!this.current(tabId, page)) return;
    this.of(tabId).savedMs += ms;
  }

  get(tabId: number): TabCounts {
    const c = this.tabs.get(tabId);
    return c ? { ...c, passed: { ...c.passed } } : emptyCounts("");
  }

  forget(tabId: number): void {
    this.tabs.delete(tabId);
    this.pages.delete(tabId);
  }
}
