// Waiting for a tab's newest page load to be complete in the extension's records (both browsers' harnesses).
import type { PageLoadData, RequestRecord } from "../../../extension/src/timings/timing-store.js";

/** What the extension's pages send to read the tab's newest page load with its records (null: none yet). */
export function newestLoadExpression(tabId: number): string {
  return `chrome.runtime.sendMessage({ type: "lanefetch/page-loads", tabId: ${tabId} }).then(({ loads }) => loads[0]
    ? chrome.runtime.sendMessage({ type: "lanefetch/page-load", id: loads[0].id }).then((r) => r.data) : null)`;
}

/** `read()` until the load event is known and every record is `done` (the browser's own view may come last). */
export async function untilSettled(read: () => Promise<PageLoadData | null>, done: (r: RequestRecord) => boolean,
  timeout: number): Promise<PageLoadData> {
  const end = Date.now() + timeout;
  for (;;) {
    const data = await read();
    if (data && data.load.loadedAt !== null && data.records.every(done)) return data;
    if (Date.now() > end) throw new Error(`the load never settled: ${JSON.stringify(data?.records.filter((r) => !done(r)).map((r) => r.url))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
