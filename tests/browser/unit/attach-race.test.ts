// Which hosts' navigations race the debugger attach instead of waiting behind the gate's block (attach-race.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ATTACH_PRIOR_MS, ATTACH_SAMPLES, RACE_FACTOR, attachEstimate, racesAttach, storedAttaches, tooLateToRenavigate, withAttach } from "../../../extension/src/intercept/attach-race.js";

test("before any attach was measured the prior decides: satellite and W-CDMA round trips race, a shorter one waits", () => {
  assert.equal(attachEstimate([]), ATTACH_PRIOR_MS);
  assert.equal(racesAttach(600, []), true);
  assert.equal(racesAttach(400, []), true);
  assert.equal(racesAttach(RACE_FACTOR * ATTACH_PRIOR_MS - 1, []), false);
  assert.equal(racesAttach(null, []), false, "an unknown round trip never races");
});

test("the slowest recent attach decides, with the margin", () => {
  const recent = [120, 230, 90];
  assert.equal(attachEstimate(recent), 230);
  assert.equal(racesAttach(RACE_FACTOR * 230, recent), true);
  assert.equal(racesAttach(RACE_FACTOR * 230 - 1, recent), false);
  assert.equal(racesAttach(400, [100, 150]), true, "W-CDMA races once attaches are measured fast");
});

test("only the newest ATTACH_SAMPLES are kept: a slow attach ages out", () => {
  let recent: number[] = [900];
  for (let i = 0; i < ATTACH_SAMPLES - 1; i++) recent = withAttach(recent, 100);
  assert.equal(attachEstimate(recent), 900);
  recent = withAttach(recent, 100);
  assert.equal(recent.length, ATTACH_SAMPLES);
  assert.equal(attachEstimate(recent), 100);
  assert.deepEqual(withAttach(recent, Number.NaN), recent, "a duration that is not one is not kept");
  assert.deepEqual(withAttach(recent, -5), recent);
});

test("a racing page without a flight is navigated again only within half a round trip of its start", () => {
  assert.equal(tooLateToRenavigate(20, 600), false);
  assert.equal(tooLateToRenavigate(300, 600), false);
  assert.equal(tooLateToRenavigate(301, 600), true);
  assert.equal(tooLateToRenavigate(5, null), true, "a host of no known round trip: never");
});

test("what storage gives back is read only where it is a list of durations", () => {
  assert.deepEqual(storedAttaches(undefined), []);
  assert.deepEqual(storedAttaches("120"), []);
  assert.deepEqual(storedAttaches([120, "x", -1, null, 80, Number.POSITIVE_INFINITY]), [120, 80]);
  assert.equal(storedAttaches(Array.from({ length: 20 }, (_, i) => i)).length, ATTACH_SAMPLES);
});

test("property: a race never happens below the margin of any kept attach", () => {
  // Deterministic pseudo-random walk over durations and round trips (bounded).
  let seed = 12345;
  const next = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
  let recent: number[] = [];
  for (let i = 0; i < 500; i++) {
    recent = withAttach(recent, Math.round(next() * 600));
    const rtt = Math.round(next() * 1200);
    if (racesAttach(rtt, recent)) for (const ms of recent) assert.ok(rtt >= RACE_FACTOR * ms, `${rtt} vs ${ms}`);
  }
});
