// Chromium: the shell of the fields probe (browser-fields-probe.ts says why it runs). An offscreen document of the
// extension's own (fields-probe.html, its script fields-probe-page.ts) asks for an image, a stylesheet and a script
// preload at the probe's name. A debugger session on that document, with Fetch on at the request stage for the
// probe's name only, reads each request's fields as it is paused — the fields the renderer gives it, which are what a
// page's paused requests carry (the network stack adds Accept-Language, Sec-Fetch-* and Accept-Encoding later, for
// both alike) — and fails it: nothing is looked up or sent.
// Order of a run: the document is created with the run's nonce (`?run=`) and does nothing on that first load; the
// session attaches, turns Fetch on and turns CSP bypassing on for it (the extension's CSP would stop the script
// preload before any request; a preload is never run), then reloads it (`Page.reload`; an offscreen document cannot
// be navigated elsewhere), and the reloaded document, which has Fetch and the bypass from its start, makes the
// requests as it loads: no message, no wait for a load event. The page makes requests only when reloaded, with a
// nonce, and where the `tabs` API is absent (an offscreen document's only API is `runtime`), so the page opened in a
// tab does nothing. The document is closed before the session is detached, and the session stays the run's until
// detached, so no request of it outlives the interception; a document left from an earlier run (the worker stopped
// during one) is closed first.
// Fonts are not asked: Chromium sends Origin with a page's same-origin font request, which the extension's own
// request (cross-origin from its page) cannot show; the helper learns a font's fields from the page's first font.
import type { Protocol } from "devtools-protocol";
import type { BrowserFields } from "../generated/protocol.js";
import { CHROMIUM_PROBE_KINDS, FieldsProbe, PROBE_URLS, type SendHeadersDetails } from "./browser-fields-probe.js";

/** The offscreen document. */
export const PROBE_PAGE = "fields-probe.html";
/** A run's nonce: crypto.randomUUID()'s form. */
const NONCE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The run whose requests the probe page makes (its `?run=` nonce), or null: none, a malformed one, a load that is not
 * the session's reload (`navigationType`, PerformanceNavigationTiming's), or a page that is not the offscreen document
 * (`hasTabsApi`: it runs in a tab). Pure. */
export function pageRun(search: string, navigationType: string | undefined, hasTabsApi: boolean): string | null {
  const run = new URLSearchParams(search).get("run");
  return run !== null && NONCE.test(run) && navigationType === "reload" && !hasTabsApi ? run : null;
}

/** A paused request of the offscreen document as the probe reads it (its own document's, no tab). Pure. */
export function pausedDetails(paused: Protocol.Fetch.RequestPausedEvent, pageUrl: string): SendHeadersDetails {
  return {
    url: paused.request.url,
    type: paused.resourceType.toLowerCase(),
    tabId: -1,
    documentUrl: pageUrl,
    requestHeaders: Object.entries(paused.request.headers).map(([name, value]) => ({ name, value })),
  };
}

/** Whether a debugger target is the offscreen document (never a tab that shows the same page). Pure. */
export function isProbeTarget(t: chrome.debugger.TargetInfo, pageUrl: string, extensionId: string): boolean {
  return t.tabId === undefined && t.extensionId === extensionId && t.url.split("?")[0] === pageUrl;
}

export class OffscreenFieldsProbe {
  private listener: ((details: SendHeadersDetails) => { cancel: boolean }) | null = null;
  private readonly probe: FieldsProbe;
  /** The offscreen document's target from the attach until the detach ended. */
  private target: string | null = null;
  private running: Promise<BrowserFields | null> | null = null;
  private readonly pageUrl = chrome.runtime.getURL(PROBE_PAGE);

  constructor() {
    this.probe = new FieldsProbe({ addListener: (listener) => void (this.listener = listener) }, new URL(this.pageUrl).origin, CHROMIUM_PROBE_KINDS);
    chrome.debugger.onEvent.addListener((source, method, params) => {
      if (source.targetId === undefined || source.targetId !== this.target || method !== "Fetch.requestPaused") return;
      const paused = params as unknown as Protocol.Fetch.RequestPausedEvent;
      // Failed first: whatever reading it does, it is never sent.
      void chrome.debugger.sendCommand(source, "Fetch.failRequest", { requestId: paused.requestId, errorReason: "BlockedByClient" })
        .catch(() => undefined);
      this.listener?.(pausedDetails(paused, this.pageUrl));
    });
  }

  /** One run (a run asked while one goes on gets that one's answer): the message, or null if nothing usable was seen
   * within `timeoutMs` or the document or session could not be had. */
  run(nonce: string, timeoutMs: number): Promise<BrowserFields | null> {
    this.running ??= this.runOnce(nonce, timeoutMs).finally(() => (this.running = null));
    return this.running;
  }

  private async runOnce(nonce: string, timeoutMs: number): Promise<BrowserFields | null> {
    let debuggee: chrome.debugger.Debuggee | null = null;
    try {
      await closeDocument(); // one left by a run the worker did not finish
      await chrome.offscreen.createDocument({
        url: `${PROBE_PAGE}?run=${nonce}`,
        reasons: [chrome.offscreen.Reason.DOM_PARSER],
        justification: "Reads the Accept field the browser sends with an image, a stylesheet and a script; the requests are stopped before they are sent.",
      });
      const target = (await chrome.debugger.getTargets()).find((t) => isProbeTarget(t, this.pageUrl, chrome.runtime.id));
      if (target === undefined) return null;
      debuggee = { targetId: target.id };
      this.target = target.id;
      await chrome.debugger.attach(debuggee, "1.3");
      const patterns = PROBE_URLS.map((urlPattern) => ({ urlPattern, requestStage: "Request" as const }));
      await chrome.debugger.sendCommand(debuggee, "Fetch.enable", { patterns } satisfies Protocol.Fetch.EnableRequest);
      await chrome.debugger.sendCommand(debuggee, "Page.setBypassCSP", { enabled: true } satisfies Protocol.Page.SetBypassCSPRequest);
      const fields = this.probe.run(null, nonce, timeoutMs);
      await chrome.debugger.sendCommand(debuggee, "Page.reload", {} satisfies Protocol.Page.ReloadRequest);
      return await fields;
    } catch (e) {
      console.warn("lanefetch: the fields probe failed", e);
      return null;
    } finally {
      // The document first: a request of it still on its way ends with it, never unintercepted.
      await closeDocument();
      if (debuggee !== null) await chrome.debugger.detach(debuggee).catch(() => undefined);
      this.target = null;
    }
  }
}

async function closeDocument(): Promise<void> {
  if (await chrome.offscreen.hasDocument().catch(() => false)) await chrome.offscreen.closeDocument().catch(() => undefined);
}
