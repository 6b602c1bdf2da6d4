// extension/PERMISSIONS.md justifies every permission each build's manifest asks for, and nothing more: a permission
// added to (or dropped from) extension/build/manifest.ts fails here until the document says why.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { readIdentity } from "../../../extension/build/identity.js";
import { manifestFor, type TargetBrowser } from "../../../extension/build/manifest.js";
import { STEP_ASIDE_BELOW_RTT_MS } from "../../../extension/src/intercept/host-speed.js";
import { NETWORK_ENABLE } from "../../../extension/src/timings/cdp-network-log.js";
import { DEFAULT_STORE_LIMITS } from "../../../extension/src/timings/timing-store.js";
import { repoRoot } from "../support/paths.js";

const doc = readFileSync(resolve(repoRoot, "extension/PERMISSIONS.md"), "utf8");
const identity = readIdentity(resolve(repoRoot, "shared/identity.json"));

/** First-column entries of the table under the section whose heading starts with `heading`. */
function documented(heading: string): string[] {
  const section = doc.split(/^## /m).find((s) => s.startsWith(heading));
  assert.ok(section, `PERMISSIONS.md has no "## ${heading}" section`);
  const names: string[] = [];
  for (const line of section.split("\n")) {
    const cell = /^\| (?:host permission )?([^|]+?) \|/.exec(line)?.[1];
    if (!cell || cell === "permission" || cell.startsWith("---")) continue;
    for (const m of cell.matchAll(/`([^`]+)`/g)) names.push(m[1] ?? "");
  }
  return names.sort();
}

function asked(browser: TargetBrowser): string[] {
  const m = manifestFor(browser, identity, "0.0.0") as { permissions: string[]; host_permissions: string[] };
  return [...m.permissions, ...m.host_permissions].sort();
}

test("every permission of the Chromium build is justified, and only those", () => {
  assert.deepEqual(documented("Chromium build"), asked("chromium"));
});

test("every permission of the Firefox build is justified, and only those", () => {
  assert.deepEqual(documented("Firefox build"), asked("firefox"));
});

// The numbers a reviewer weighs the `debugger` and `scripting` justifications by are the code's.
test("the limits PERMISSIONS.md states are the ones the extension uses", () => {
  const below = /known to be so close that pipelining cannot win \(round trip below (\d+) ms\)/.exec(doc)?.[1];
  assert.equal(Number(below), STEP_ASIDE_BELOW_RTT_MS);
  const loads = [...doc.matchAll(/for the last (\d+) page loads/g)].map((m) => Number(m[1]));
  assert.ok(loads.length >= 3);
  for (const n of loads) assert.equal(n, DEFAULT_STORE_LIMITS.pageLoads);
  const buffer = /at most (\d+) MiB per debugging session[^)]*; (\d+) KiB per response/.exec(doc);
  assert.equal(Number(buffer?.[1]) * 1024 * 1024, NETWORK_ENABLE.maxTotalBufferSize);
  assert.equal(Number(buffer?.[2]) * 1024, NETWORK_ENABLE.maxResourceBufferSize);
});
