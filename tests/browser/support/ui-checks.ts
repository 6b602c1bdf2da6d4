// What the UI tests share: screenshots under tests/artifacts/ (git-ignored) to look at, the axe-core engine run in a
// page, and a bounded poll that fails with a message (no test waits on the wall clock for a fixed time).
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { repoRoot } from "./paths.js";

export const artifactsDir = join(repoRoot, "tests/artifacts");

/** A full-page screenshot as tests/artifacts/NAME.png; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** In a page that has run axeSource: the violations of serious or critical impact (an expression any automation
 * protocol can evaluate). */
export const AXE_SERIOUS_EXPRESSION = `window.axe.run(document).then((result) => result.violations
  .filter((v) => v.impact === "serious" || v.impact === "critical")
  .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")) })))`;

/** axe-core's source as one expression (Firefox's BiDi evaluates expressions, not scripts). */
export const AXE_LOAD_EXPRESSION = `(() => { ${axeSource}\n; return typeof window.axe; })()`;

/** Runs axe-core in the page (evaluated over the debugging protocol: an extension page's CSP forbids injected
 * script tags) and returns the violations of serious or critical impact. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  return page.evaluate<AxeViolation[]>(AXE_SERIOUS_EXPRESSION);
}

/** Polls `check` until it returns a value other than undefined; throws "`what` not within N ms (last: …)" otherwise. */
export async function pollUntil<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms${last === undefined ? "" : ` (last error: ${last instanceof Error ? last.message : JSON.stringify(last)})`}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
