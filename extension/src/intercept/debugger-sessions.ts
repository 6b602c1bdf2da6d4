// chrome.debugger sessions of intercepted tabs: attach, Fetch.enable at request stage, and auto-attached child
// sessions (out-of-process iframes, the site's service worker) that get Fetch.enable too. The tab's interception
// switched off (setFetch: the helper went, its host is fast) is off in its child sessions as well, and a child
// attached meanwhile gets no Fetch: their requests are not paused for a helper that cannot take them.
//
// A service worker (or shared worker) is no tab's: every tab of its scope auto-attaches it, each in a child session
// of its own, and Chromium pauses each of its requests in one of them only, the newest tab's (measured: a fetch the
// worker made for the first tab was paused in the second tab's session). CDP does not say which client a worker's
// request serves, so the sessions of such workers (and anything they attach) are known here (workerOf), and their
// requests are filed as the worker's own, never as the page of the tab whose session paused them.
import type { Protocol } from "devtools-protocol";
import { NETWORK_ENABLE } from "../timings/cdp-network-log.js";
import { debuggerResponder } from "../deliver/debugger-responder.js";
import { isGoneError, type FetchResponder } from "../deliver/fetch-responder.js";
import { EmbeddedFrames } from "./embedded-frames.js";

const PROTOCOL = "1.3";
const FETCH_ENABLE: Protocol.Fetch.EnableRequest = { patterns: [{ urlPattern: "*", requestStage: "Request" }] };
const AUTO_ATTACH: Protocol.Target.SetAutoAttachRequest = { autoAttach: true, waitForDebuggerOnStart: true, flatten: true };
/** Child targets whose network requests the tab's own session does not see. */
const FETCH_CHILD_TYPES = new Set(["iframe", "service_worker", "shared_worker"]);
/** Child targets shared by every tab of their scope: no tab's. */
const SHARED_WORKER_TYPES = new Set(["service_worker", "shared_worker"]);

export interface SessionEvents {
  paused(tabId: number, source: chrome.debugger.DebuggerSession, event: Protocol.Fetch.RequestPausedEvent): void;
  /** CDP Network events of the tab and its child sessions (the browser's own timing, for the timing panel). */
  network?(tabId: number, method: string, params: unknown, sessionId: string | undefined): void;
  /** Page.frameStartedNavigating of the tab's own session (Page is enabled with its Network domain): which loads
   * bypass the cache (intercept/cache-bypass.ts). */
  navigating?(tabId: number, event: Protocol.Page.FrameStartedNavigatingEvent): void;
  detached(tabId: number, reason: string): void;
}

export interface AttachResult {
  ok: boolean;
  error?: string;
  /** ms from the attach's start until Fetch was on (what a navigation racing the attach must outrun); absent when
   * the tab was attached already or the attach failed. */
  fetchOnMs?: number;
}

export class DebuggerSessions {
  /** tabId → the tab's main frame id (its target id). */
  private readonly attached = new Map<number, string>();
  /** Tabs attached while their navigation went on, whose Network domain waits for the page's load (networkAfterLoad). */
  private readonly networkLater = new Set<number>();
  /** Which child sessions are embedded sites' frames, and their sites. */
  readonly frames = new EmbeddedFrames();
  /** Child sessions whose requests Fetch pauses while their tab's interception is on: sessionId → tabId. */
  private readonly fetchChildren = new Map<string, number>();
  /** Attached tabs whose interception is switched off (setFetch): their child sessions get no Fetch. */
  private readonly fetchOff = new Set<number>();
  /** How each session's held requests are answered: "tabId/sessionId" ("tabId/" for the tab's own session). */
  private readonly responders = new Map<string, FetchResponder>();
  /** Child sessions of shared workers (and the targets they attach): sessionId → the worker's tab session and URL. */
  private readonly workers = new Map<string, { tabId: number; url: string }>();

  constructor(private readonly events: SessionEvents) {
    chrome.debugger.onEvent.addListener((source, method, params) => {
      if (source.tabId === undefined || !this.attached.has(source.tabId)) return;
      if (method === "Fetch.requestPaused") {
        this.events.paused(source.tabId, source, params as unknown as Protocol.Fetch.RequestPausedEvent);
      } else if (method === "Page.frameStartedNavigating") {
        if (source.sessionId === undefined) this.events.navigating?.(source.tabId, params as unknown as Protocol.Page.FrameStartedNavigatingEvent);
      } else if (method.startsWith("Network.")) {
        this.events.network?.(source.tabId, method, params, source.sessionId);
      } else if (method === "Target.attachedToTarget") {
        const event = params as unknown as Protocol.Target.AttachedToTargetEvent;
        // Known before the child runs (it waits for the debugger): its first request finds it
        const { type, targetId, url } = event.targetInfo;
        this.frames.attached(source.tabId, event.sessionId, type, targetId, url, source.sessionId);
        const parentWorker = source.sessionId === undefined ? undefined : this.workers.get(source.sessionId);
        if (parentWorker !== undefined) this.workers.set(event.sessionId, parentWorker);
        else if (SHARED_WORKER_TYPES.has(type)) this.workers.set(event.sessionId, { tabId: source.tabId, url });
        void this.setUpChild(source.tabId, event);
      } else if (method === "Target.detachedFromTarget") {
        const { sessionId } = params as unknown as Protocol.Target.DetachedFromTargetEvent;
        this.frames.detached(sessionId);
        this.workers.delete(sessionId);
        this.fetchChildren.delete(sessionId);
        this.responders.delete(`${source.tabId}/${sessionId}`);
      }
    });
    chrome.debugger.onDetach.addListener((source, reason) => {
      if (source.tabId !== undefined) this.networkLater.delete(source.tabId);
      if (source.tabId !== undefined) this.frames.tabGone(source.tabId);
      if (source.tabId !== undefined) this.forgetSessions(source.tabId);
      if (source.tabId === undefined || !this.attached.delete(source.tabId)) return;
      this.events.detached(source.tabId, reason);
    });
  }

  /** How requests paused in `source` (the tab's session or a child's) are answered; one per session, kept while it
   * lasts (forgotten when the child session ends or the tab is detached: a long-lived tab has many frames). */
  responderFor(source: chrome.debugger.DebuggerSession): FetchResponder {
    const key = `${source.tabId ?? ""}/${source.sessionId ?? ""}`;
    let responder = this.responders.get(key);
    if (!responder) {
      responder = debuggerResponder(source.sessionId ? { tabId: source.tabId, sessionId: source.sessionId } : { tabId: source.tabId });
      // Not kept for a tab no longer attached (nothing would forget it)
      if (source.tabId !== undefined && this.attached.has(source.tabId)) this.responders.set(key, responder);
    }
    return responder;
  }

  /** Responders kept (one per live session). */
  get respondersKept(): number {
    return this.responders.size;
  }

  /** The script URL of the shared worker (service worker, shared worker) whose session `sessionId` is, or which
   * attached it; null for the tab's own session and its frames' and dedicated workers' sessions (the tab's). */
  workerOf(sessionId: string | undefined): string | null {
    return sessionId === undefined ? null : this.workers.get(sessionId)?.url ?? null;
  }

  isAttached(tabId: number): boolean {
    return this.attached.has(tabId);
  }

  mainFrameId(tabId: number): string | undefined {
    return this.attached.get(tabId);
  }

  get tabIds(): number[] {
    return [...this.attached.keys()];
  }

  /** loading: the tab's navigation goes on meanwhile (it races the attach, attach-race.ts). Then Network is not
   * enabled now: enabling it while a navigation is pending waits for the commit (the attach measured 1.26 s over a
   * 600 ms link instead of 13 ms), and the renderer, its network agent enabled just as its preload scanner asks,
   * then asked again for requests it had made (apache-rewrite: a stylesheet and two images twice in every load).
   * It is enabled once the page loaded (networkAfterLoad): that page's requests have no browser timing in the panel. */
  async attach(tabId: number, { loading = false }: { loading?: boolean } = {}): Promise<AttachResult> {
    if (this.attached.has(tabId)) return { ok: true };
    const target = { tabId };
    const began = performance.now();
    let fetchOnMs: number | undefined;
    try {
      await chrome.debugger.attach(target, PROTOCOL);
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
    // Known attached before any command goes: the auto-attach's child targets are announced as events at once.
    this.attached.set(tabId, "");
    if (loading) this.networkLater.add(tabId);
    try {
      // Sent at once, not each after the last one's answer: the session takes its commands in order (Fetch first),
      // and the navigation the gate blocked waits for all of them (one round trip to the browser, not four: the
      // attach took 86 ms of a gated navigation's ~170 ms one by one).
      const [targets] = await Promise.all([
        chrome.debugger.getTargets(),
        chrome.debugger.sendCommand(target, "Fetch.enable", FETCH_ENABLE).then(() => (fetchOnMs = performance.now() - began)),
        loading ? Promise.resolve() : this.enableNetwork(target),
        chrome.debugger.sendCommand(target, "Target.setAutoAttach", AUTO_ATTACH),
      ]);
      this.attached.set(tabId, targets.find((t) => t.tabId === tabId)?.id ?? "");
      return fetchOnMs === undefined ? { ok: true } : { ok: true, fetchOnMs };
    } catch (e) {
      this.attached.delete(tabId);
      this.networkLater.delete(tabId);
      await chrome.debugger.detach(target).catch(() => undefined);
      return { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
  }

  /** Is the tab's Network domain left for after its page's load (attach's `loading`)? Its document is then seen
   * only through webRequest (document-arrival.ts). */
  networkDeferred(tabId: number): boolean {
    return this.networkLater.has(tabId);
  }

  /** The tab's page loaded: a Network domain left for later (attach's `loading`) is enabled now. */
  async networkAfterLoad(tabId: number): Promise<boolean> {
    if (!this.networkLater.delete(tabId) || !this.attached.has(tabId)) return false;
    await this.enableNetwork({ tabId });
    return true;
  }

  async detach(tabId: number): Promise<void> {
    this.networkLater.delete(tabId);
    this.frames.tabGone(tabId);
    this.forgetSessions(tabId);
    if (!this.attached.delete(tabId)) return;
    await chrome.debugger.detach({ tabId }).catch(() => undefined);
  }

  /** Fetch on (every request of the tab's page paused for lanefetch) or off (the browser fetches them itself) on the
   * tab's own session and its child sessions (an embedded frame's requests are the page's too: paused while the
   * helper is gone, they would wait for it to start). Errors are logged: a failed switch leaves the old mode. */
  async setFetch(tabId: number, on: boolean): Promise<void> {
    if (!this.attached.has(tabId)) return;
    if (on) this.fetchOff.delete(tabId);
    else this.fetchOff.add(tabId);
    const children = [...this.fetchChildren].filter(([, t]) => t === tabId).map(([sessionId]) => ({ tabId, sessionId }));
    // Sent at once, the tab's own session's first (the new page's subresources must find it on).
    await Promise.all([{ tabId }, ...children].map((target) =>
      (on ? chrome.debugger.sendCommand(target, "Fetch.enable", FETCH_ENABLE) : chrome.debugger.sendCommand(target, "Fetch.disable"))
        .catch((e: unknown) => {
          // A child that ended meanwhile is no failure
          if (!("sessionId" in target && isGoneError(e))) console.warn(`lanefetch: Fetch.${on ? "enable" : "disable"} failed`, e);
        })));
  }

  /** The browser's own timing (CDP Network events) of the tab's own session on or off. */
  async setNetwork(tabId: number, on: boolean): Promise<void> {
    if (!this.attached.has(tabId)) return;
    this.networkLater.delete(tabId);
    if (on) await this.enableNetwork({ tabId });
    // Page stays on (a few events per navigation): the navigation that turns interception on again must find it
    else await chrome.debugger.sendCommand({ tabId }, "Network.disable").catch((e: unknown) => console.warn("lanefetch: Network.disable failed", e));
  }

  /** The tab's session went (detached): what was kept of it and its child sessions. */
  private forgetSessions(tabId: number): void {
    this.fetchOff.delete(tabId);
    for (const [sessionId, t] of this.fetchChildren) if (t === tabId) this.fetchChildren.delete(sessionId);
    for (const [sessionId, w] of this.workers) if (w.tabId === tabId) this.workers.delete(sessionId);
    for (const key of [...this.responders.keys()]) if (key.startsWith(`${tabId}/`)) this.responders.delete(key);
  }

  /** Detach sessions this extension left from an earlier run of its service worker (state was lost). */
  async detachLeftovers(): Promise<void> {
    const targets = await chrome.debugger.getTargets();
    for (const t of targets) {
      if (t.attached && t.tabId !== undefined && t.extensionId === chrome.runtime.id && !this.attached.has(t.tabId)) {
        await chrome.debugger.detach({ tabId: t.tabId }).catch(() => undefined);
      }
    }
  }

  /** The browser's own request timing for the panel; optional: interception works without it. In the tab's own
   * session the Page domain too, for its navigations' type (a hard reload: cache-bypass.ts), at the same moments
   * (not while a navigation races the attach: enabled once the page loaded, as Network). */
  private async enableNetwork(target: chrome.debugger.DebuggerSession): Promise<void> {
    await Promise.all([
      this.events.network ? chrome.debugger.sendCommand(target, "Network.enable", NETWORK_ENABLE).catch((e: unknown) => {
        console.warn("lanefetch: Network.enable failed (no browser timing for the panel)", e);
      }) : Promise.resolve(),
      this.events.navigating && target.sessionId === undefined ? chrome.debugger.sendCommand(target, "Page.enable").catch((e: unknown) => {
        console.warn("lanefetch: Page.enable failed (a hard reload's requests are not told apart)", e);
      }) : Promise.resolve(),
    ]);
  }

  private async setUpChild(tabId: number, event: Protocol.Target.AttachedToTargetEvent): Promise<void> {
    const child: chrome.debugger.DebuggerSession = { tabId, sessionId: event.sessionId };
    try {
      if (FETCH_CHILD_TYPES.has(event.targetInfo.type)) {
        // Known before its Fetch.enable goes: a switch (setFetch) after this reaches it, in order on its session
        this.fetchChildren.set(event.sessionId, tabId);
        if (!this.fetchOff.has(tabId)) await chrome.debugger.sendCommand(child, "Fetch.enable", FETCH_ENABLE);
        await chrome.debugger.sendCommand(child, "Target.setAutoAttach", AUTO_ATTACH);
      }
    } catch (e) {
      console.warn("lanefetch: child session setup failed", event.targetInfo.type, e);
    } finally {
      await chrome.debugger.sendCommand(child, "Runtime.runIfWaitingForDebugger").catch(() => undefined);
    }
    // After the target runs: a service worker held at start answers Network.enable only once it runs.
    if (FETCH_CHILD_TYPES.has(event.targetInfo.type)) await this.enableNetwork(child);
  }
}
