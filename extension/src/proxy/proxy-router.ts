// Proxy mode (Firefox): which requests go to the helper's proxy. http:// requests of tabs whose top-level page is an
// enabled site go to the listener the helper opened for that page context (tab, top-level site, address space,
// private browsing, a container's cookie store, and for a cross-site frame's requests that frame's site:
// embeddedSite; a frame's requests are judged by its own document's address space where that is more public than the
// page's: requestSpace), with direct as the fail-over; everything else goes direct, and so do requests to origins known
// to be so close that pipelining cannot win (host-speed.ts). The helper's port is never used
// while the native port is down: losing it drops every context at once. With "split large downloads" on, requests
// split-rule.ts marks go to the context's split port instead (a proxied request cannot carry the flag).
import type { Page } from "../generated/protocol.js";
import { likelyLarge } from "../lanes/split-rule.js";
import { webRequestResourceType } from "../timings/browser-fetched.js";
import { addressSpaceOfUrl, mayReach, morePublic, type AddressSpace } from "../sites/address-space.js";
import { treatedPrivate } from "../tab-privacy.js";
import { schemefulSite } from "../sites/site-rule.js";
import type { ProxyInfo, ProxyRequestDetails } from "./firefox-proxy-api.js";
import { setNewest } from "../bounded-map.js";

export const DIRECT: ProxyInfo = { type: "direct" };
/** Seconds Firefox avoids the helper's listener after it failed to connect (then it tries again). */
const FAILOVER_TIMEOUT_S = 1;
/** Request types the browser keeps: long-lived streams and media (ranges, the media cache). */
const KEPT_TYPES = new Set(["websocket", "media", "object", "beacon", "speculative"]);

/** A page context's listener: its port, and the port whose requests the helper fetches split (if it offers one). */
export interface ContextPorts {
  port: number;
  splitPort: number | null;
}

export interface RouterPorts {
  /** Ask the helper for a listener for this context; resolves to its ports, or null if none can be had. */
  open(contextId: string, page: Page): Promise<ContextPorts | null>;
  close(contextId: string): void;
}

export interface PageContext {
  contextId: string;
  tabId: number;
  pageUrl: string;
  page: Page;
  port: number | null;
  splitPort: number | null;
  opening: Promise<number | null> | null;
  /** The webRequest type of requests routed to this context's listener, by URL (recent ones): the helper can only
   * guess a request's type from its fields (an http:// script sends no Sec-Fetch-Dest), Firefox knows it. */
  routedTypes: Map<string, string>;
}

/** Routed types remembered per context: enough for a page's requests in flight. */
const ROUTED_TYPES_LIMIT = 300;

function rememberType(ctx: PageContext, details: ProxyRequestDetails): void {
  setNewest(ctx.routedTypes, details.url, details.type, ROUTED_TYPES_LIMIT);
}

/** The top-level page a request belongs to, from what proxy.onRequest tells. */
export function topLevelUrl(details: ProxyRequestDetails): string {
  if (details.type === "main_frame") return details.url;
  const ancestors = details.frameAncestors ?? [];
  const top = ancestors[ancestors.length - 1];
  if (top) return top.url;
  return details.documentUrl ?? "";
}

/** The site a request is embedded under, as Chromium keys it (embedded-frames.ts): where the request's document, or
 * a frame it sits inside, is cross-site to the top-level page, the site of the innermost such frame (a frame's
 * document request is that frame's own); undefined for the page's own requests and its same-site frames'. A document
 * without a site of its own (about:blank, about:srcdoc) is its parent's. */
export function embeddedSite(details: ProxyRequestDetails, topSite: string): string | undefined {
  if (details.type === "main_frame") return undefined;
  const ancestors = (details.frameAncestors ?? []).slice(0, -1).map((a) => a.url);
  const own = details.type === "sub_frame" ? details.url : details.documentUrl;
  for (const url of own === undefined ? ancestors : [own, ...ancestors]) {
    const site = schemefulSite(url);
    if (site !== null && site !== topSite) return site;
  }
  return undefined;
}

/** The address space of a document URL: an http(s) URL's host's, a blob: URL's origin's; null for a document that
 * has none of its own (about:blank, about:srcdoc, data:), which its parent made. */
function documentSpace(url: string): AddressSpace | null {
  if (url.startsWith("blob:")) {
    try {
      return addressSpaceOfUrl(new URL(url).origin);
    } catch {
      return null;
    }
  }
  return addressSpaceOfUrl(url);
}

/** The address space a request is judged by, as Chromium judges it (embedded-frames.ts): the more public of the
 * top-level page's (`pageSpace`) and the space of the document that makes it (a frame's document request is made
 * by its parent). A document without a space of its own takes the nearest frame around it that has one. So a public
 * frame inside a loopback page reaches no more through the helper than it may itself. */
export function requestSpace(details: ProxyRequestDetails, pageSpace: AddressSpace): AddressSpace {
  if (details.type === "main_frame") return pageSpace;
  const around = (details.frameAncestors ?? []).map((a) => a.url);
  for (const url of details.documentUrl === undefined ? around : [details.documentUrl, ...around]) {
    const space = documentSpace(url);
    if (space !== null) return morePublic(pageSpace, space);
  }
  return pageSpace;
}

export function pageOf(url: string, incognito: boolean): Page | null {
  const site = schemefulSite(url);
  const space = addressSpaceOfUrl(url);
  if (site === null || space === null) return null;
  return { address_space: space, top_site: site, private_browsing: incognito };
}

export class ProxyRouter {
  private readonly contexts = new Map<string, PageContext>();
  private counter = 0;
  private secret: string | null = null;
  /** https:// URLs whose host an opted-in site's CA (trusted by this Firefox) covers: CONNECT to the helper. */
  private httpsCovered: (url: string) => boolean = () => false;
  /** Step-aside (host-speed.ts): why a request to this URL's origin goes direct (the origin is fast), or null. */
  private fastOrigin: (url: string) => string | null = () => null;
  private steppedAside: (details: ProxyRequestDetails, pageUrl: string, detail: string) => void = () => undefined;
  /** speed-probe.ts: for a document whose origin's RTT is unknown, learn it before routing (null: nothing to wait for). */
  private probeRtt: (url: string, page: Page) => Promise<void> | null = () => null;
  /** A tab's document goes to its context's listener: the helper is told (the context's requests are that page's
   * load, learned and answered from its prefetch flight: docs/prefetch.md); `direct`: it went to the network
   * itself (step-aside), so what still comes to the listener is no page's. */
  private navigated: (contextId: string, url: string, page: Page, direct: boolean) => void = () => undefined;
  /** The options page's "split large downloads" (split-rule.ts). */
  splitLarge = false;

  constructor(
    private readonly ports: RouterPorts,
    /** Whether an enabled (and active) site covers this top-level page URL. */
    private readonly siteActive: (pageUrl: string) => boolean,
    private readonly openTimeoutMs = 3000,
  ) {}

  /** The helper answered hello with proxy mode: routing may start. */
  start(secret: string): void {
    this.secret = secret;
  }

  /** The native port is gone: stop routing now; the listeners died with the helper. */
  stop(): void {
    this.secret = null;
    this.contexts.clear();
  }

  /** Firefox HTTPS acceleration (https-sites.ts) says which https:// URLs the helper may terminate. */
  setHttpsCovered(covered: (url: string) => boolean): void {
    this.httpsCovered = covered;
  }

  /** Where pipelining cannot win, requests go direct; `passed` hears of each such request (counters, records). */
  setStepAside(fastOrigin: (url: string) => string | null,
    passed: (details: ProxyRequestDetails, pageUrl: string, detail: string) => void): void {
    this.fastOrigin = fastOrigin;
    this.steppedAside = passed;
  }

  /** Documents of origins with an unknown RTT wait for `probe` (the helper's connect time) before they are routed. */
  setRttProbe(probe: (url: string, page: Page) => Promise<void> | null): void {
    this.probeRtt = probe;
  }

  /** `navigated` hears of each document routed to the helper, with the context it goes to. */
  setNavigation(navigated: (contextId: string, url: string, page: Page, direct: boolean) => void): void {
    this.navigated = navigated;
  }

  get routing(): boolean {
    return this.secret !== null;
  }

  route(details: ProxyRequestDetails): ProxyInfo[] | Promise<ProxyInfo[]> | ProxyInfo {
    if (this.secret === null || details.tabId < 0 || KEPT_TYPES.has(details.type)) return DIRECT;
    const https = details.url.startsWith("https://");
    // https only for hosts of opted-in sites whose CA this Firefox trusts; everything else https goes direct.
    if (!details.url.startsWith("http://") && !(https && this.httpsCovered(details.url))) return DIRECT;
    const pageUrl = topLevelUrl(details);
    if (!this.siteActive(pageUrl)) return DIRECT;
    // A request whose details do not say whether its window is private counts as private (tab-privacy.ts).
    const page = pageOf(pageUrl, treatedPrivate(details.incognito));
    const target = addressSpaceOfUrl(details.url);
    // A frame's requests are judged by its own document's space where that is more public than the page's: its
    // context's listener is opened with it (the helper checks the resolved addresses against it too).
    if (page !== null) page.address_space = requestSpace(details, page.address_space);
    if (page === null || target === null || !mayReach(page.address_space, target)) return DIRECT;
    // A container's tabs: Firefox keeps their cookies and connections apart from every other container's, and so
    // must the helper (its page's partition), or one connection would carry two identities' requests.
    const store = details.cookieStoreId;
    if (store !== undefined && store !== "firefox-default" && store !== "firefox-private") page.cookie_store = store;
    // proxy.onRequest asks per request: once the document's connection showed the origin fast, the rest go direct.
    const fast = this.fastOrigin(details.url);
    if (fast !== null) return this.stepAside(details, pageUrl, page, fast);
    // A cross-site frame's requests are the embedded site's: a context of their own, whose page names that site, so
    // the helper keeps them apart from the page's (connections, records) and never learns or flies them as its load.
    const frameSite = page.top_site === undefined ? undefined : embeddedSite(details, page.top_site);
    if (frameSite !== undefined) page.frame_site = frameSite;
    const ctx = this.contextFor(details.tabId, pageUrl, page);
    const probing = details.type === "main_frame" ? this.probeRtt(details.url, page) : null;
    const split = this.splitLarge && likelyLarge(details.url, webRequestResourceType(details.type));
    if (ctx.port !== null && probing === null) return this.toHelper(ctx, details, page, (split && ctx.splitPort) || ctx.port);
    const port = ctx.port !== null ? Promise.resolve(ctx.port) : (ctx.opening ??= this.openContext(ctx));
    const key = this.key(ctx.tabId, page);
    return Promise.all([port, probing]).then(([p]) => {
      // The site may have been turned off (or a browser proxy made lanefetch inactive) while this request waited.
      if (p === null || this.contexts.get(key) !== ctx || !this.siteActive(pageUrl)) return [DIRECT];
      const fastNow = probing === null ? null : this.fastOrigin(details.url);
      if (fastNow !== null) return [this.stepAside(details, pageUrl, page, fastNow)];
      return this.toHelper(ctx, details, page, (split && ctx.splitPort) || p);
    });
  }

  /** The request goes to the context's listener (`port`); a document is told to the helper as the tab's page. */
  private toHelper(ctx: PageContext, details: ProxyRequestDetails, page: Page, port: number): ProxyInfo[] {
    rememberType(ctx, details);
    if (details.type === "main_frame") this.navigated(ctx.contextId, details.url, page, false);
    return this.via(port, details.url.startsWith("https://"));
  }

  /** The request goes direct (its origin is fast); a document stepped aside is told to the tab's context, if it has
   * one, so what still comes to it is no page's. */
  private stepAside(details: ProxyRequestDetails, pageUrl: string, page: Page, detail: string): ProxyInfo {
    this.steppedAside(details, pageUrl, detail);
    const ctx = this.contexts.get(this.key(details.tabId, page));
    if (details.type === "main_frame" && ctx !== undefined && ctx.port !== null) this.navigated(ctx.contextId, details.url, page, true);
    return DIRECT;
  }

  /** Credentials for the helper's 407 challenge on one of its listeners; null for anyone else's. */
  credentialsFor(host: string, port: number): { username: string; password: string } | null {
    if (this.secret === null || host !== "127.0.0.1") return null;
    for (const ctx of this.contexts.values()) {
      if (ctx.port === port || ctx.splitPort === port) return { username: "lanefetch", password: this.secret };
    }
    return null;
  }

  /** The tab committed another http(s) page (or closed: null): close the contexts it no longer uses. Other pages
   * (about:blank while a tab opens) change nothing. */
  tabChanged(tabId: number, pageUrl: string | null): void {
    if (pageUrl !== null && pageOf(pageUrl, false) === null) return;
    for (const ctx of [...this.contexts.values()]) {
      if (ctx.tabId !== tabId) continue;
      const page = pageUrl === null ? null : pageOf(pageUrl, ctx.page.private_browsing ?? false);
      // (a frame's context may be judged more public than its page: requestSpace)
      if (page && page.top_site === ctx.page.top_site && mayReach(page.address_space, ctx.page.address_space)) continue;
      this.contexts.delete(this.key(ctx.tabId, ctx.page));
      // Every context was asked for a listener: one still opening (or whose open timed out) is closed too, after
      // the helper opens it (it handles messages in order), or it would stay open until the helper evicts it.
      this.ports.close(ctx.contextId);
    }
  }

  /** The helper closed this context's listener itself (it keeps a bounded number: the oldest goes): the context is
   * forgotten, so its tab's next request asks for a listener again instead of going to a port that is closed or,
   * given to another context's listener, would fetch it as that context's page. */
  contextClosed(contextId: string): void {
    for (const [key, ctx] of this.contexts) if (ctx.contextId === contextId) this.contexts.delete(key);
  }

  contextById(contextId: string): PageContext | undefined {
    for (const ctx of this.contexts.values()) if (ctx.contextId === contextId) return ctx;
    return undefined;
  }

  private via(port: number, https = false): ProxyInfo[] {
    const helper: ProxyInfo = { type: "http", host: "127.0.0.1", port, failoverTimeout: FAILOVER_TIMEOUT_S };
    // Firefox sends an extension's proxyAuthorizationHeader with CONNECT (not with plain http:// requests).
    if (https && this.secret !== null) helper.proxyAuthorizationHeader = `Basic ${btoa(`lanefetch:${this.secret}`)}`;
    return [helper, DIRECT];
  }

  private key(tabId: number, page: Page): string {
    return `${tabId}|${page.top_site ?? ""}|${page.address_space}|${page.private_browsing ? 1 : 0}|${page.frame_site ?? ""}|${page.cookie_store ?? ""}`;
  }

  private contextFor(tabId: number, pageUrl: string, page: Page): PageContext {
    const key = this.key(tabId, page);
    let ctx = this.contexts.get(key);
    if (!ctx) {
      this.counter += 1;
      ctx = {
        contextId: `t${tabId}-${this.counter}`, tabId, pageUrl, page, port: null, splitPort: null, opening: null, routedTypes: new Map(),
      };
      this.contexts.set(key, ctx);
    }
    ctx.pageUrl = pageUrl;
    return ctx;
  }

  private async openContext(ctx: PageContext): Promise<number | null> {
    const timeout = new Promise<null>((r) => setTimeout(() => r(null), this.openTimeoutMs));
    const ports = await Promise.race([this.ports.open(ctx.contextId, ctx.page), timeout]);
    ctx.opening = null;
    if (ports !== null && this.contexts.get(this.key(ctx.tabId, ctx.page)) === ctx) {
      ctx.port = ports.port;
      ctx.splitPort = ports.splitPort;
    }
    return ports?.port ?? null;
  }
}
