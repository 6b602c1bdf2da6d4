// Per-tab counters of the current page: accelerated, passed through (by reason), bytes, estimated time saved.
import type { PassReason } from "../intercept/pass-reason.js";

export interface TabCounts {
  pageUrl: string;
  accelerated: number;
  passed: Partial<Record<PassReason, number>>;
  bytes: number;
  savedMs: number;
}

export function emptyCounts(pageUrl: string): TabCounts {
  return { pageUrl, accelerated: 0, passed: {}, bytes: 0, savedMs: 0 };
}

export class TabCounters {
  private readonly tabs = new Map<number, TabCounts>();

  /** A new top-level page committed in the tab: start counting afresh. */
  newPage(tabId: number, pageUrl: string): void {
    this.tabs.set(tabId, emptyCounts(pageUrl));
  }

  private of(tabId: number): TabCounts {
    let counts = this.tabs.get(tabId);
    if (!counts) {
      counts = emptyCounts("");
      this.tabs.set(tabId, counts);
    }
    return counts;
  }

  accelerated(tabId: number, bytes: number): void {
    const c = this.of(tabId);
    c.accelerated += 1;
    c.bytes += bytes;
  }

  passed(tabId: number, reason: PassReason): void {
    const c = this.of(tabId);
    c.passed[reason] = (c.passed[reason] ?? 0) + 1;
  }

  saved(tabId: number, ms: number): void {
    this.of(tabId).savedMs += ms;
  }

  get(tabId: number): TabCounts {
    const c = this.tabs.get(tabId);
    return c ? { ...c, passed: { ...c.passed } } : emptyCounts("");
  }

  forget(tabId: number): void {
    this.tabs.delete(tabId);
  }
}
