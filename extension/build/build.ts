// `npm run build`: protocol types from the schema, bundles, static pages, icons and the manifest per browser.
import { build } from "esbuild";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readIdentity } from "./identity.js";
import { iconPng } from "./icons.js";
import { manifestFor, type TargetBrowser } from "./manifest.js";
import { generateProtocolTypes } from "./protocol-types.js";

const root = resolve(fileURLToPath(import.meta.url), "../../..");
const src = join(root, "extension/src");

const entries: Record<TargetBrowser, Record<string, string>> = {
  chromium: {
    background: join(src, "background/chromium-main.ts"),
    popup: join(src, "ui/popup/popup.ts"),
    options: join(src, "ui/options/options.ts"),
    timing: join(src, "ui/panel/timing-page.ts"),
    devtools: join(src, "ui/panel/devtools.ts"),
    "fields-probe": join(src, "intercept/fields-probe-page.ts"),
  },
  firefox: {
    background: join(src, "background/firefox-main.ts"),
    popup: join(src, "ui/popup/popup.ts"),
    options: join(src, "ui/options/options.ts"),
    timing: join(src, "ui/panel/timing-page.ts"),
    devtools: join(src, "ui/panel/devtools.ts"),
  },
};
const staticFiles: Record<TargetBrowser, string[]> = {
  chromium: ["intercept/fields-probe.html"],
  firefox: [],
};
const pages = [
  "ui/popup/popup.html", "ui/popup/popup.css", "ui/options/options.html", "ui/options/options.css",
  "ui/panel/timing.html", "ui/panel/timing.css", "ui/panel/devtools.html",
];

async function buildFor(browser: TargetBrowser, version: string): Promise<string> {
  const out = join(root, "extension/dist", browser);
  await rm(out, { recursive: true, force: true });
  await mkdir(join(out, "icons"), { recursive: true });
  const identity = readIdentity(join(root, "shared/identity.json"));
  await build({
    entryPoints: entries[browser],
    outdir: out,
    bundle: true,
    format: "iife",
    target: browser === "chromium" ? "chrome125" : "firefox128",
    sourcemap: "linked",
    logLevel: "warning",
    define: {
      __LANEFETCH_BROWSER__: JSON.stringify(browser),
      __LANEFETCH_NATIVE_HOST__: JSON.stringify(identity.native_host_name),
    },
  });
  for (const file of [...pages, ...staticFiles[browser]]) await copyFile(join(src, file), join(out, file.split("/").pop() ?? file));
  for (const size of [16, 32, 48, 128]) await writeFile(join(out, "icons", `${size}.png`), iconPng(size));
  await writeFile(join(out, "manifest.json"), JSON.stringify(manifestFor(browser, identity, version), null, 2) + "\n");
  return out;
}

async function main(): Promise<void> {
  const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string };
  await generateProtocolTypes(join(root, "shared/protocol.schema.json"), join(src, "generated/protocol.ts"));
  const browsers = (process.argv.slice(2).length ? process.argv.slice(2) : ["chromium"]) as TargetBrowser[];
  for (const browser of browsers) {
    if (!(browser in entries) || Object.keys(entries[browser]).length === 0) throw new Error(`no build for ${browser} yet`);
    console.log(`built ${await buildFor(browser, pkg.version)}`);
  }
}

await main();
