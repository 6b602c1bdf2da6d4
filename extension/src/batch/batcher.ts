// Groups items arriving close together under one key (a tab's origin): a group is flushed when no item arrived for
// `quietMs`, when its first item waited `maxWaitMs`, or when it holds `maxItems`.

export interface BatcherOptions {
  quietMs: number;
  maxWaitMs: number;
  maxItems: number;
}

export const DEFAULT_BATCHING: BatcherOptions = { quietMs: 3, maxWaitMs: 15, maxItems: 200 };

interface Group<T> {
  items: T[];
  firstAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class Batcher<T> {
  private readonly groups = new Map<string, Group<T>>();

  constructor(
    private readonly flush: (key: string, items: T[]) => void,
    private readonly options: BatcherOptions = DEFAULT_BATCHING,
    private readonly now: () => number = () => performance.now(),
  ) {}

  add(key: string, item: T): void {
    let group = this.groups.get(key);
    if (!group) {
      group = { items: [], firstAt: this.now(), timer: undefined };
      this.groups.set(key, group);
    }
    group.items.push(item);
    if (group.items.length >= this.options.maxItems) {
      this.flushKey(key);
      return;
    }
    if (group.timer !== undefined) clearTimeout(group.timer);
    const waited = this.now() - group.firstAt;
    const delay = Math.max(0, Math.min(this.options.quietMs, this.options.maxWaitMs - waited));
    group.timer = setTimeout(() => this.flushKey(key), delay);
  }

  /** Flush every group whose key starts with `prefix` now (e.g. a tab navigating away). */
  flushWhere(predicate: (key: string) => boolean): void {
    for (const key of [...this.groups.keys()]) if (predicate(key)) this.flushKey(key);
  }

  /** Take the items of matching groups without flushing them (e.g. a tab that closed). */
  dropWhere(predicate: (key: string) => boolean): T[] {
    const dropped: T[] = [];
    for (const [key, group] of [...this.groups]) {
      if (!predicate(key)) continue;
      if (group.timer !== undefined) clearTimeout(group.timer);
      this.groups.delete(key);
      dropped.push(...group.items);
    }
    return dropped;
  }

  hasWhere(predicate: (key: string) => boolean): boolean {
    for (const key of this.groups.keys()) if (predicate(key)) return true;
    return false;
  }

  get pending(): number {
    let n = 0;
    for (const g of this.groups.values()) n += g.items.length;
    return n;
  }

  private flushKey(key: string): void {
    const group = this.groups.get(key);
    if (!group) return;
    if (group.timer !== undefined) clearTimeout(group.timer);
    this.groups.delete(key);
    if (group.items.length) this.flush(key, group.items);
  }
}
