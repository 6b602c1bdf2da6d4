// Paths the TypeScript tests use.
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(fileURLToPath(import.meta.url), "../../../..");
export const helperHost = resolve(repoRoot, ".venv/bin/lanefetch-host");
export const helperCli = resolve(repoRoot, ".venv/bin/lanefetch");
/** LANEFETCH_CHROMIUM_DIST: another build of the extension (benchmarks compare variants side by side). */
export const chromiumDist = process.env.LANEFETCH_CHROMIUM_DIST ?? resolve(repoRoot, "extension/dist/chromium");
export const chromiumExecutable = "/usr/lib/chromium/chromium";
export const firefoxDist = resolve(repoRoot, "extension/dist/firefox");
export const firefoxExecutable = "/usr/bin/firefox-esr";
