// What a chrome.debugger session on the page costs by itself (run inside the lab's client namespace by
// bench/scenario_debugger_cost.py):
//   node --import tsx tests/bench/debugger_cost_driver.ts URL IMAGES VARIANT
// VARIANT: "detached" (no session), "attached" (session, no domain), "fetch" (+ Fetch.enable for every request at
// request stage, each continued from the extension's service worker as lanefetch passes a request), "network"
// (+ Network.enable only), "fetch-network" (both, as lanefetch's debugger mode did), "fetch-documents"
// (Fetch.enable for documents only), "fetch-off" (Fetch enabled, then disabled before the navigation),
// "fetch-off-at-document" (both enabled; Fetch.disable once the document's response head is in), "webrequest"
// (session, no domain; chrome.webRequest listeners for the tab instead). Fresh profile, the built extension loaded but no site enabled: the session
// is opened from the extension's service worker exactly as lanefetch opens it. Prints one JSON line (page_measure).
import type { Page } from "playwright-core";
import { freshProfile, launch } from "../browser/support/chromium-harness.js";
import { exitOnError, loadEnded, measure, readLoad } from "./page_measure.js";

const VARIANTS = ["detached", "attached", "fetch", "network", "fetch-network", "fetch-documents", "fetch-off", "fetch-off-at-document", "webrequest"] as const;
type Variant = (typeof VARIANTS)[number];

async function main(): Promise<void> {
  const [url, imagesArg, variantArg] = process.argv.slice(2);
  const variant = VARIANTS.find((v) => v === variantArg);
  if (url === undefined || variant === undefined) throw new Error(`usage: URL IMAGES ${VARIANTS.join("|")}`);
  const browser = await launch(freshProfile(false));
  try {
    const page: Page = await browser.context.newPage();
    await page.goto("about:blank");
    // The newest tab is this page (playwright's default page was opened first).
    const tabId = await browser.worker.evaluate(async () => Math.max(...(await chrome.tabs.query({})).map((t) => t.id ?? -1)));
    if (variant !== "detached") {
      await browser.worker.evaluate(async ([tab, v]: readonly [number, Variant]) => {
        const target = { tabId: tab };
        chrome.debugger.onEvent.addListener((source, method, params) => {
          if (method !== "Fetch.requestPaused" || source.tabId !== tab) return;
          const { requestId } = params as { requestId: string };
          void chrome.debugger.sendCommand(source, "Fetch.continueRequest", { requestId });
        });
        await chrome.debugger.attach(target, "1.3");
        if (v === "fetch" || v === "fetch-network" || v === "fetch-off" || v === "fetch-off-at-document") {
          await chrome.debugger.sendCommand(target, "Fetch.enable", { patterns: [{ urlPattern: "*", requestStage: "Request" }] });
        }
        if (v === "fetch-documents") {
          await chrome.debugger.sendCommand(target, "Fetch.enable", { patterns: [{ urlPattern: "*", resourceType: "Document", requestStage: "Request" }] });
        }
        if (v === "fetch-off") await chrome.debugger.sendCommand(target, "Fetch.disable");
        if (v === "fetch-off-at-document") {
          chrome.debugger.onEvent.addListener((source, method, params) => {
            if (method === "Network.responseReceived" && (params as { type?: string }).type === "Document") {
              void chrome.debugger.sendCommand(source, "Fetch.disable");
            }
          });
        }
        if (v === "webrequest") {
          const filter = { urls: ["<all_urls>"], tabId: tab };
          const seen: unknown[] = [];
          chrome.webRequest.onBeforeRequest.addListener((d) => void seen.push(d), filter);
          chrome.webRequest.onResponseStarted.addListener((d) => void seen.push(d), filter);
          chrome.webRequest.onCompleted.addListener((d) => void seen.push(d), filter);
          chrome.webRequest.onErrorOccurred.addListener((d) => void seen.push(d), filter);
        }
        if (v === "network" || v === "fetch-network" || v === "fetch-off-at-document") {
          chrome.debugger.onEvent.addListener(() => undefined); // events travel to the worker as they do for lanefetch
          await chrome.debugger.sendCommand(target, "Network.enable", { maxTotalBufferSize: 0, maxResourceBufferSize: 0, maxPostDataSize: 0 });
        }
      }, [tabId, variant] as const);
    }
    const r = await measure({
      untilLoaded: () => page.waitForFunction(loadEnded, undefined, { timeout: 120000 }),
      read: () => page.evaluate(readLoad),
    }, Number(imagesArg ?? "77"), () => page.goto(url, { waitUntil: "load", timeout: 120000 }));
    console.log(JSON.stringify({ mode: variant, ...r }));
    await page.close();
  } finally {
    await browser.close();
  }
}

main().catch(exitOnError);
