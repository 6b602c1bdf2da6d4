// Firefox HTTPS acceleration (opt-in per site): the sites the user opted in (storage.local "httpsSites"), made true
// in the helper with `https_sites` (a local CA per site, name-constrained to it, in this Firefox profile), and the
// helper's answer: which sites this Firefox already trusts ("active": their https:// requests may go to the helper)
// and which wait for a restart. Only sites that are also enabled count: turning a site off removes its trust. An
// answer the helper could not send (too large for the native port: its `error`) names no site: none is active then
// (their https:// requests go direct, as before the opt-in), and each opted-in site shows that error.
import type { HelperConnection } from "../bridge/helper-connection.js";
import type { HttpsState, ToExtension } from "../generated/protocol.js";
import { httpHost, isSiteRule, matchingRule, ruleKey, sameRule, type SiteRule } from "../sites/site-rule.js";
import type { StorageAreaLike } from "../sites/storage-area.js";

export const HTTPS_SITES_KEY = "httpsSites";

export type HttpsSiteState = HttpsState["sites"][number]["state"] | "pending";

/** What the popup shows about HTTPS for the tab's site (Firefox only). */
export interface HttpsTabStatus {
  /** The user opted this site in. */
  optedIn: boolean;
  state: HttpsSiteState | null;
  detail: string | null;
  /** Where the CA went (the profile lanefetch runs in, or every profile), from the helper. */
  which: string | null;
}

export async function readHttpsSites(local: StorageAreaLike): Promise<SiteRule[]> {
  const got = (await local.get(HTTPS_SITES_KEY))[HTTPS_SITES_KEY];
  return Array.isArray(got) ? got.filter(isSiteRule).map(({ scope, name }) => ({ scope, name })) : [];
}

export async function setHttpsSite(local: StorageAreaLike, rule: SiteRule, on: boolean): Promise<void> {
  const sites = (await readHttpsSites(local)).filter((s) => !sameRule(s, rule));
  if (on) sites.push({ scope: rule.scope, name: rule.name });
  await local.set({ [HTTPS_SITES_KEY]: sites });
}

export class HttpsSites {
  private wanted: SiteRule[] = [];
  private state: HttpsState | null = null;
  private sentNonce = "";
  private counter = 0;

  constructor(private readonly connection: HelperConnection) {
    connection.onMessage((m) => this.onMessage(m));
  }

  /** The opted-in sites that are also enabled; sent to the helper now (if connected) and on every reconnect. */
  setWanted(optedIn: readonly SiteRule[], enabled: readonly SiteRule[]): void {
    this.wanted = optedIn.filter((s) => enabled.some((e) => sameRule(e, s)));
    this.send();
  }

  /** Send the set again (the native port came back: a new helper process knows nothing yet). */
  send(): void {
    if (this.connection.state.status !== "connected") return;
    this.counter += 1;
    this.sentNonce = `https-${this.counter}`;
    this.connection.send({ type: "https_sites", sites: this.wanted, nonce: this.sentNonce });
  }

  forget(): void {
    this.state = null;
  }

  /** Whether an https:// URL's host is covered by a site whose CA this Firefox trusts now. */
  covers(url: string): boolean {
    if (!url.startsWith("https://") || httpHost(url) === null) return false;
    return matchingRule(this.activeRules(), url) !== null;
  }

  activeRules(): SiteRule[] {
    const active = (this.state?.sites ?? []).filter((s) => s.state === "active");
    return this.wanted.filter((w) => active.some((a) => ruleKey(a) === ruleKey(w)));
  }

  statusFor(rule: SiteRule | null, optedIn: readonly SiteRule[]): HttpsTabStatus {
    const opted = rule !== null && optedIn.some((s) => sameRule(s, rule));
    const reported = rule === null ? undefined : this.state?.sites.find((s) => ruleKey(s) === ruleKey(rule));
    const error = this.state?.error;
    return {
      optedIn: opted,
      state: !opted ? null : reported ? reported.state : error !== undefined ? "failed" : "pending",
      detail: reported?.detail ?? error ?? null,
      which: this.state?.which ?? null,
    };
  }

  private onMessage(m: ToExtension): void {
    if (m.type !== "https_state" || (m.nonce !== undefined && m.nonce !== this.sentNonce)) return;
    this.state = m;
  }
}
