// Estimate of the time pipelining saved for one batch (one origin of one page), from the helper's timings.

export const TIME_SAVED_MODEL =
  "Without lanefetch the browser opens at most 6 HTTP/1.1 connections per origin and sends one request per round " +
  "trip on each: estimate = connection setup + ceil(n / 6) × the batch's fastest request-to-first-byte time + the " +
  "longest body transfer. Saved = that estimate minus the batch's real time from queueing to its last byte (never below 0).";

export interface TimingLike {
  timing: {
    queued: number;
    connect_start: number | null;
    connect_end: number | null;
    sent: number | null;
    first_byte: number | null;
    last_byte: number | null;
  };
}

const BROWSER_CONNECTIONS_PER_ORIGIN = 6;

export function estimateSavedMs(records: readonly TimingLike[]): number {
  const done = records.filter((r) => r.timing.sent !== null && r.timing.first_byte !== null && r.timing.last_byte !== null);
  if (done.length === 0) return 0;
  const start = Math.min(...done.map((r) => r.timing.queued));
  const finish = Math.max(...done.map((r) => r.timing.last_byte ?? 0));
  const actual = finish - start;
  const roundTrip = Math.min(...done.map((r) => (r.timing.first_byte ?? 0) - (r.timing.sent ?? 0)));
  const setups = done
    .filter((r) => r.timing.connect_start !== null && r.timing.connect_end !== null)
    .map((r) => (r.timing.connect_end ?? 0) - (r.timing.connect_start ?? 0));
  const setup = setups.length ? Math.min(...setups) : 0;
  const transfer = Math.max(...done.map((r) => (r.timing.last_byte ?? 0) - (r.timing.first_byte ?? 0)));
  const baseline = setup + Math.ceil(done.length / BROWSER_CONNECTIONS_PER_ORIGIN) * Math.max(roundTrip, 0) + transfer;
  return Math.max(0, baseline - actual);
}
