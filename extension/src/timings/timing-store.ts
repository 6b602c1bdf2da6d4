// Per-request records of recent page loads (what lanefetch did, and the helper's timing for each request), kept
// small and in memory; the timing panel reads them.
import type { Timing } from "../generated/protocol.js";
import type { PassReason } from "../intercept/pass-reason.js";

export interface RequestRecord {
  id: string;
  tabId: number;
  pageUrl: string;
  url: string;
  method: string;
  resourceType: string;
  priority: string;
  batchId: string | null;
  /** When lanefetch saw the request (ms since the epoch). */
  pausedAt: number;
  /** When the browser got its answer. */
  answeredAt: number | null;
  outcome: "pending" | "fulfilled" | "passed";
  reason: PassReason | null;
  detail: string | null;
  status: number | null;
  bodyBytes: number;
  /** The helper's timing message, when it took the request. */
  timing: Timing | null;
}

export class TimingStore {
  private readonly records = new Map<string, RequestRecord>();

  constructor(private readonly capacity = 5000) {}

  add(record: RequestRecord): void {
    this.records.set(record.id, record);
    if (this.records.size > this.capacity) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
  }

  update(id: string, change: Partial<Omit<RequestRecord, "id">>): RequestRecord | undefined {
    const record = this.records.get(id);
    if (record) Object.assign(record, change);
    return record;
  }

  get(id: string): RequestRecord | undefined {
    return this.records.get(id);
  }

  forTab(tabId: number, pageUrl?: string): RequestRecord[] {
    return [...this.records.values()].filter((r) => r.tabId === tabId && (pageUrl === undefined || r.pageUrl === pageUrl));
  }

  forBatch(batchId: string): RequestRecord[] {
    return [...this.records.values()].filter((r) => r.batchId === batchId);
  }

  get size(): number {
    return this.records.size;
  }
}
