// extension/PERMISSIONS.md justifies every permission each build's manifest asks for, and nothing more: a permission
// added to (or dropped from) extension/build/manifest.ts fails here until the document says why.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { readIdentity } from "../../../extension/build/identity.js";
import { manifestFor, type TargetBrowser } from "../../../extension/build/manifest.js";
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
