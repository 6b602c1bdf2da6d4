// The Accept field the browser sends with an image, a font, a stylesheet and a script, known before a page needs it.
// The helper prefetches a subresource only with the exact fields the browser will send for it (fidelity), and learns
// them from the page's own requests; but a new user's first page has none yet when its document names them:
// - Firefox (proxy mode): its first image request comes after the page's render-blocking stylesheet chain
//   (cmake-doc: four `@import`s, 2.5 s over `sat`);
// - Chromium (debugger mode): the page's first batch comes only after its whole document (a fulfilled document is
//   handed over whole), so nothing the document names could fly before it.
// Accept per kind is browser-wide (each browser's image, font, style and script loaders set one, whatever the
// document), so the extension asks for one of each itself, to a name under .localhost (both browsers resolve it to
// loopback themselves: no DNS query, no DNS-over-HTTPS, no https upgrade), reads the fields before the request is
// sent and stops it there: no request is sent, not even to this machine.
// - Firefox: the background page's requests, read and cancelled in a blocking `webRequest.onBeforeSendHeaders`
//   (FieldsProbe's event); no script (the page's CSP stops its request before webRequest sees it).
// - Chromium: an offscreen document's, paused at the request stage of the DevTools protocol's Fetch domain and
//   failed (offscreen-fields-probe.ts: the same fields a page's paused requests carry); its script is a preload
//   (never run); no font (a page's same-origin font request carries an Origin in Chromium that no request of the
//   extension's own can show).
// Run each time the helper connects (a helper that starts keeps nothing in memory; Chromium: at the first
// intercepted navigation after that). Only Accept and the User-Agent it belongs to are sent: every other field
// still comes from the page's requests.
import type { BrowserFields } from "../generated/protocol.js";

export const PROBE_HOST = "fields.lanefetch.localhost";
/** The URLs of the probe's requests, in both schemes (extension pages upgrade http: to https:, their CSP says so). */
export const PROBE_URLS = [`http://${PROBE_HOST}/*`, `https://${PROBE_HOST}/*`];

type Kind = BrowserFields["accept"][number];
/** The kinds the probe asks for: each destination's mode, and the type its request gets (Firefox's webRequest type;
 * Chromium's CDP resource type, lowercased). */
export const PROBE_KINDS = [
  { kind: { destination: "image", mode: "no-cors" }, requestType: "image" },
  { kind: { destination: "font", mode: "cors" }, requestType: "font" },
  { kind: { destination: "style", mode: "no-cors" }, requestType: "stylesheet" },
  { kind: { destination: "script", mode: "no-cors" }, requestType: "script" },
] as const;
/** What each browser's probe asks for. Firefox: no script (its background page's CSP stops a script's request before
 * webRequest sees it). Chromium: no font (offscreen-fields-probe.ts says why); its script is a preload, never run. */
export const FIREFOX_PROBE_KINDS = ["image", "font", "style"] as const;
export const CHROMIUM_PROBE_KINDS = ["image", "style", "script"] as const;
type ProbeKind = (typeof PROBE_KINDS)[number];

export interface HeaderField {
  name: string;
  value?: string;
}

export interface SendHeadersDetails {
  url: string;
  type?: string;
  tabId?: number;
  documentUrl?: string;
  originUrl?: string;
  requestHeaders?: HeaderField[];
}

/** The probe's requests as they are about to be sent: Firefox's webRequest.onBeforeSendHeaders, as the probe uses it
 * (blocking: the answer cancels the request), or Chromium's paused requests (offscreen-fields-probe.ts). */
export interface SendHeadersEvent {
  addListener(listener: (details: SendHeadersDetails) => { cancel: boolean }, filter: { urls: string[] }, extra: string[]): void;
}

/** Starts one request of a kind to `url` (the shell: a document of the extension's own, documentLoads). */
export interface ProbeLoads {
  image(url: string): void;
  font(url: string): void;
  style(url: string): void;
  script(url: string): void;
}

function field(headers: readonly HeaderField[], name: string): string | null | undefined {
  const found = headers.find((h) => h.name.toLowerCase() === name);
  return found === undefined ? null : found.value;
}

/** The browser_fields message from the fields seen on the probe's requests, by destination; null where no
 * request showed a User-Agent, or they disagree on it (one browser's fields never answer for another's). A kind
 * seen without Accept is sent as null (the browser sends none). Pure. */
export function browserFields(seen: ReadonlyMap<string, readonly HeaderField[]>): BrowserFields | null {
  const accept: Kind[] = [];
  const agents = new Set<string>();
  for (const { kind } of PROBE_KINDS) {
    const headers = seen.get(kind.destination);
    if (headers === undefined) continue;
    const ua = field(headers, "user-agent");
    if (typeof ua !== "string" || ua === "") return null;
    agents.add(ua);
    const value = field(headers, "accept");
    if (value === undefined) continue; // present without a value (binary): not a field the helper can compare
    accept.push({ ...kind, value });
  }
  const [userAgent] = agents;
  const [a, b, c, d] = accept; // one per kind: at most PROBE_KINDS.length
  if (userAgent === undefined || agents.size !== 1 || a === undefined) return null;
  const kinds: BrowserFields["accept"] = b === undefined ? [a] : c === undefined ? [a, b] : d === undefined ? [a, b, c] : [a, b, c, d];
  return { type: "browser_fields", user_agent: userAgent, accept: kinds };
}

/** The kind a probe URL asks for (its last path segment, a destination), or null for a URL not of the probe. */
export function probeKindOf(url: string, nonce: string): ProbeKind | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const [, got, kind] = parsed.pathname.split("/");
  if (parsed.hostname !== PROBE_HOST || got !== nonce) return null;
  return PROBE_KINDS.find((k) => k.kind.destination === kind) ?? null;
}

/** The URL of a run's request of one kind. */
export function probeUrl(nonce: string, kind: string): string {
  return `http://${PROBE_HOST}/${nonce}/${kind}`;
}

/** Starts the run's requests, one of each of `kinds`, in a document (`loads`). */
export function startLoads(loads: ProbeLoads, nonce: string, kinds: readonly string[]): void {
  try {
    if (kinds.includes("image")) loads.image(probeUrl(nonce, "image"));
    if (kinds.includes("font")) loads.font(probeUrl(nonce, "font"));
    if (kinds.includes("style")) loads.style(probeUrl(nonce, "style"));
    if (kinds.includes("script")) loads.script(probeUrl(nonce, "script"));
  } catch (e) {
    console.warn("lanefetch: the fields probe could not start a request", e);
  }
}

function defaultSchedule(run: () => void, ms: number): () => void {
  const timer = setTimeout(run, ms);
  return () => clearTimeout(timer);
}

/** The probe: one listener for the probe's name (Firefox: registered once, at the background's start, and never
 * removed, it cancels every request to that name, whoever makes it and whenever, one of a probe that timed out
 * included, so none is ever sent; Chromium: the offscreen document's paused requests, each failed by the shell) gives
 * the run under way the fields of its own requests: its nonce (random per run), made by the extension's own document
 * (no tab), of the kind's request type. */
export class FieldsProbe {
  private collect: ((kind: string, headers: HeaderField[]) => void) | null = null;
  private nonce = "";

  /** `kinds`: the destinations asked for (FIREFOX_PROBE_KINDS, CHROMIUM_PROBE_KINDS). */
  constructor(event: SendHeadersEvent, private readonly ownOrigin: string, private readonly kinds: readonly string[]) {
    event.addListener((details) => this.onRequest(details), { urls: PROBE_URLS }, ["blocking", "requestHeaders"]);
  }

  private onRequest(details: SendHeadersDetails): { cancel: boolean } {
    const probed = this.collect === null ? null : probeKindOf(details.url, this.nonce);
    const own = details.tabId === -1 && (details.documentUrl ?? details.originUrl ?? "").startsWith(`${this.ownOrigin}/`);
    const asked = probed !== null && this.kinds.includes(probed.kind.destination);
    if (asked && own && details.type === probed.requestType) this.collect?.(probed.kind.destination, details.requestHeaders ?? []);
    return { cancel: true };
  }

  /** Ask for one request of each kind (in `loads`; null: the caller starts them, startLoads) and read their fields;
   * resolves with the message once all were seen, or with what was seen after `timeoutMs` (null if nothing usable).
   * A run started while one is under way replaces it. */
  run(loads: ProbeLoads | null, nonce: string, timeoutMs: number,
    schedule: (run: () => void, ms: number) => () => void = defaultSchedule): Promise<BrowserFields | null> {
    return new Promise((resolve) => {
      const seen = new Map<string, HeaderField[]>();
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        if (this.nonce === nonce) this.collect = null;
        cancelTimer();
        resolve(browserFields(seen));
      };
      this.nonce = nonce;
      this.collect = (kind, headers) => {
        if (done || seen.has(kind)) return;
        seen.set(kind, headers);
        if (seen.size === this.kinds.length) queueMicrotask(finish);
      };
      const cancelTimer = schedule(finish, timeoutMs); // finish runs later (a microtask, or the timer): set by then
      if (loads !== null) startLoads(loads, nonce, this.kinds);
    });
  }
}

/** A document's loads (Firefox's background page, Chromium's offscreen document): an image, a font face, a stylesheet
 * link and a script preload, each dropped once it failed. */
export function documentLoads(doc: Document): ProbeLoads {
  return {
    image: (url) => {
      const image = new Image();
      image.src = url;
    },
    font: (url) => {
      const face = new FontFace("lanefetch-fields-probe", `url("${url}")`);
      doc.fonts.add(face);
      void face.load().catch(() => undefined).finally(() => doc.fonts.delete(face));
    },
    style: (url) => {
      const link = doc.createElement("link");
      link.rel = "stylesheet";
      link.href = url;
      link.onerror = () => link.remove();
      doc.head.append(link);
    },
    // A preload: fetched as a script is (the same fields), never run.
    script: (url) => {
      const link = doc.createElement("link");
      link.rel = "preload";
      link.as = "script";
      link.href = url;
      link.onerror = () => link.remove();
      doc.head.append(link);
    },
  };
}
