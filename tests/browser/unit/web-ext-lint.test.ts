// `web-ext lint` (Firefox's add-on linter) on the built Chromium package. The Chromium build uses Chromium-only
// parts on purpose (the debugger and offscreen APIs, a service worker without a Firefox fallback, no gecko id): exactly those
// findings are expected there; anything else (unsafe code, bad manifest fields, JS errors) fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { chromiumDist, firefoxDist, repoRoot } from "../support/paths.js";

interface Finding {
  code: string;
  message: string;
  file?: string;
}

const CHROMIUM_ONLY = new Set([
  "BACKGROUND_SERVICE_WORKER_NOFALLBACK", // Chromium MV3 background is a service worker; Firefox gets its own build
  "ADDON_ID_REQUIRED", // the gecko id goes into the Firefox build's manifest
  "MISSING_DATA_COLLECTION_PERMISSIONS", // a Firefox (gecko) manifest field
]);

function chromiumOnly(f: Finding): boolean {
  if (CHROMIUM_ONLY.has(f.code)) return true;
  if (f.code === "MANIFEST_PERMISSIONS" && /"(debugger|offscreen)"/.test(f.message)) return true;
  // Asks for a gecko strict_min_version, which only the Firefox build's manifest carries (128.0).
  if (f.code === "RESTRICTED_PERMISSION" && /"proxy" permission requires "strict_min_version"/.test(f.message)) return true;
  return f.code === "UNSUPPORTED_API" && /^(debugger|offscreen)\./.test(f.message);
}

test("web-ext lint finds nothing but the deliberate Chromium-only parts", () => {
  assert.ok(existsSync(resolve(chromiumDist, "manifest.json")), "build first: npm run build");
  let out: string;
  try {
    out = execFileSync(resolve(repoRoot, "node_modules/.bin/web-ext"), ["lint", "--source-dir", chromiumDist, "--self-hosted", "--output", "json"], { encoding: "utf8" });
  } catch (e) {
    out = (e as { stdout?: string }).stdout ?? "";
  }
  const report = JSON.parse(out) as { errors: Finding[]; warnings: Finding[]; notices: Finding[] };
  const unexpected = [...report.errors, ...report.warnings, ...report.notices].filter((f) => !chromiumOnly(f));
  assert.deepEqual(unexpected, []);
  assert.ok(report.warnings.some((f) => f.code === "UNSUPPORTED_API"), "the linter really read background.js");
});

test("web-ext lint finds nothing at all in the Firefox package", () => {
  assert.ok(existsSync(resolve(firefoxDist, "manifest.json")), "build first: npm run build");
  let out: string;
  try {
    out = execFileSync(resolve(repoRoot, "node_modules/.bin/web-ext"), ["lint", "--source-dir", firefoxDist, "--self-hosted", "--output", "json"], { encoding: "utf8" });
  } catch (e) {
    out = (e as { stdout?: string }).stdout ?? "";
  }
  const report = JSON.parse(out) as Partial<{ errors: Finding[]; warnings: Finding[]; notices: Finding[] }>;
  assert.ok(report.errors && report.warnings && report.notices, "the linter produced a report");
  assert.deepEqual([...report.errors, ...report.warnings, ...report.notices], []);
});
