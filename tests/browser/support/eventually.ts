// Waiting for something the browser, the extension or the helper does on its own schedule: poll until it holds,
// and fail loudly — saying what was awaited and what was last seen — instead of sleeping a guessed time or falling
// through a wait loop. The deadline is a bound on waiting, never an assertion about speed.

export interface WaitOptions {
  timeoutMs?: number;
  everyMs?: number;
}

/** Polls `check` until it returns something other than undefined, null or false, and resolves to that; throws
 * "<what>: never happened in N ms (last seen: …)" at the deadline. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 10_000, everyMs = 50 }: WaitOptions = {},
  lastSeen: () => unknown = () => undefined,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined | null | false;
  for (;;) {
    last = await check();
    if (last !== undefined && last !== null && last !== false) return last;
    if (Date.now() > end) {
      throw new Error(`${what}: never happened in ${timeoutMs} ms (last seen: ${JSON.stringify(lastSeen() ?? last)})`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
