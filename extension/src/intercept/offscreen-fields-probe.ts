// Chromium: the shell of the fields probe (browser-fields-probe.ts says why it runs). An offscreen document of the
// extension's own (fields-probe-page.ts) asks for an image, a stylesheet and a script preload at the probe's name; a
// debugger session on that document, with Fetch on at the request stage for the probe's name only, reads each
// request's fields as it is paused — the fields the renderer gives it, which are what a page's paused requests carry
// (the network stack adds Accept-Language, Sec-Fetch-* and Accept-Encoding later, for both alike) — and fails it:
// nothing is looked up or sent. The extension's CSP would stop the script preload before any request, so the session
// turns CSP bypassing on for that document and reloads it first (`Page.setBypassCSP`); a preload is never run, and
// every request to the probe's name is failed. The document and the session live only while a run goes on, and the
// document is closed before the session is detached, so no request of it can outlive the interception.
// Fonts are not asked: Chromium sends Origin with a page's same-origin font request, which the extension's own
// request (cross-origin from its page) cannot show; the helper learns a font's fields from the page's first font.
import type { Protocol } from "devtools-protocol";
import type { BrowserFields } from "../generated/protocol.js";
import { CHROMIUM_PROBE_KINDS, FieldsProbe, PROBE_HOST, PROBE_URLS, type ProbeLoads, type SendHeadersDetails } from "./browser-fields-probe.js";

/** The offscreen document (intercept/fields-probe.html, its script fields-probe-page.ts). */
export const PROBE_PAGE = "fields-probe.html";
/** The message that asks the offscreen document for one request. */
export const PROBE_LOAD = "lanefetch/fields-probe-load";

export interface ProbeLoadMessage {
  type: typeof PROBE_LOAD;
  kind: "image" | "font" | "style" | "script";
  url: string;
}

/** Whether `message` asks the offscreen document for a request of the probe (its name, nothing else). Pure. */
export function isProbeLoad(message: unknown): message is ProbeLoadMessage {
  const m = message as Partial<ProbeLoadMessage> | null;
  if (m === null || typeof m !== "object" || m.type !== PROBE_LOAD || typeof m.url !== "string") return false;
  if (m.kind !== "image" && m.kind !== "font" && m.kind !== "style" && m.kind !== "script") return false;
  try {
    return new URL(m.url).hostname === PROBE_HOST;
  } catch {
    return false;
  }
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

function messageLoads(): ProbeLoads {
  const send = (kind: ProbeLoadMessage["kind"], url: string): void => {
    void chrome.runtime.sendMessage({ type: PROBE_LOAD, kind, url } satisfies ProbeLoadMessage)
      .catch((e: unknown) => console.warn("lanefetch: the fields probe's document did not take a request", e));
  };
  return {
    image: (url) => send("image", url), font: (url) => send("font", url), style: (url) => send("style", url), script: (url) => send("script", url),
  };
}

export class OffscreenFieldsProbe {
  private listener: ((details: SendHeadersDetails) => { cancel: boolean }) | null = null;
  private readonly probe: FieldsProbe;
  /** The offscreen document's target while a run has it attached. */
  private target: string | null = null;
  private running: Promise<BrowserFields | null> | null = null;
  /** Resolves when the attached document fired its load event (after the reload). */
  private loaded: (() => void) | null = null;

  constructor() {
    const pageUrl = chrome.runtime.getURL(PROBE_PAGE);
    this.probe = new FieldsProbe({ addListener: (listener) => void (this.listener = listener) }, new URL(pageUrl).origin, CHROMIUM_PROBE_KINDS);
    chrome.debugger.onEvent.addListener((source, method, params) => {
      if (source.targetId === undefined || source.targetId !== this.target) return;
      if (method === "Page.loadEventFired") this.loaded?.();
      if (method !== "Fetch.requestPaused") return;
      const paused = params as unknown as Protocol.Fetch.RequestPausedEvent;
      this.listener?.(pausedDetails(paused, pageUrl));
      void chrome.debugger.sendCommand(source, "Fetch.failRequest", { requestId: paused.requestId, errorReason: "BlockedByClient" })
        .catch(() => undefined);
    });
  }

  /** One run (a run asked while one goes on gets that one's answer): the message, or null if nothing usable was seen
   * within `timeoutMs` or the document or session could not be had. */
  run(nonce: string, timeoutMs: number): Promise<BrowserFields | null> {
    this.running ??= this.runOnce(nonce, timeoutMs).finally(() => (this.running = null));
    return this.running;
  }

  private async runOnce(nonce: string, timeoutMs: number): Promise<BrowserFields | null> {
    const pageUrl = chrome.runtime.getURL(PROBE_PAGE);
    let debuggee: chrome.debugger.Debuggee | null = null;
    let created = false;
    try {
      if (await chrome.offscreen.hasDocument()) return null; // not ours to use (nothing else of lanefetch opens one)
      await chrome.offscreen.createDocument({
        url: PROBE_PAGE,
        reasons: [chrome.offscreen.Reason.DOM_PARSER],
        justification: "Reads the Accept field the browser sends with an image and a stylesheet; the requests are stopped before they are sent.",
      });
      created = true;
      const target = (await chrome.debugger.getTargets()).find((t) => t.url === pageUrl);
      if (target === undefined) return null;
      debuggee = { targetId: target.id };
      await chrome.debugger.attach(debuggee, "1.3");
      this.target = target.id;
      const patterns = PROBE_URLS.map((urlPattern) => ({ urlPattern, requestStage: "Request" as const }));
      await chrome.debugger.sendCommand(debuggee, "Fetch.enable", { patterns } satisfies Protocol.Fetch.EnableRequest);
      await this.reloadBypassingCsp(debuggee, timeoutMs);
      return await this.probe.run(messageLoads(), nonce, timeoutMs);
    } catch (e) {
      console.warn("lanefetch: the fields probe failed", e);
      return null;
    } finally {
      this.loaded = null;
      // The document first: a request of it still on its way ends with it, never unintercepted.
      if (created) await chrome.offscreen.closeDocument().catch(() => undefined);
      this.target = null;
      if (debuggee !== null) await chrome.debugger.detach(debuggee).catch(() => undefined);
    }
  }

  /** The document again, with its CSP bypassed (for the script preload): resolves once it loaded, or after
   * `timeoutMs` (the run then sees no script, and sends what it saw). */
  private async reloadBypassingCsp(debuggee: chrome.debugger.Debuggee, timeoutMs: number): Promise<void> {
    await chrome.debugger.sendCommand(debuggee, "Page.enable");
    await chrome.debugger.sendCommand(debuggee, "Page.setBypassCSP", { enabled: true } satisfies Protocol.Page.SetBypassCSPRequest);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const loaded = new Promise<void>((resolve) => {
      this.loaded = resolve;
      timer = setTimeout(resolve, timeoutMs);
    });
    await chrome.debugger.sendCommand(debuggee, "Page.reload", {} satisfies Protocol.Page.ReloadRequest);
    await loaded;
    clearTimeout(timer);
    this.loaded = null;
  }
}
