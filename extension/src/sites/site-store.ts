// The user's enabled sites (storage.local, persistent) and the sites switched off for this browser session
// because the user cancelled the debugging bar (storage.session).
import { readHttpsSites, setHttpsSite } from "../proxy/https-sites.js";
import { isSiteRule, ruleKey, ruleMatchesHost, sameRule, type SiteRule } from "./site-rule.js";
import type { StorageAreaLike } from "./storage-area.js";

export interface EnabledSite extends SiteRule {
  /** When the user enabled it (ms since the epoch). */
  added: number;
}

const SITES_KEY = "sites";
const SESSION_OFF_KEY = "sessionOff";

function readRules<T extends SiteRule>(value: unknown, extra: (v: Record<string, unknown>) => T | null): T[] {
  if (!Array.isArray(value)) return [];
  const out: T[] = [];
  for (const item of value) {
    if (!isSiteRule(item)) continue;
    const full = extra(item as unknown as Record<string, unknown>);
    if (full) out.push(full);
  }
  return out;
}

export class SiteStore {
  constructor(
    private readonly local: StorageAreaLike,
    private readonly session: StorageAreaLike,
  ) {}

  static readonly storageKeys = { sites: SITES_KEY, sessionOff: SESSION_OFF_KEY } as const;

  /** The changes, one after the other: each reads, then writes back, its list (two at once would each write back
   * the list without the other's change: the debugging bar cancelled detaches every tab at once). */
  private changes: Promise<unknown> = Promise.resolve();

  private serially(change: () => Promise<void>): Promise<void> {
    const done = this.changes.then(change);
    this.changes = done.catch(() => undefined);
    return done;
  }

  async enabledSites(): Promise<EnabledSite[]> {
    const got = await this.local.get(SITES_KEY);
    return readRules(got[SITES_KEY], (v) => ({
      scope: v.scope as SiteRule["scope"],
      name: v.name as string,
      added: typeof v.added === "number" ? v.added : 0,
    }));
  }

  async sessionOff(): Promise<SiteRule[]> {
    const got = await this.session.get(SESSION_OFF_KEY);
    return readRules(got[SESSION_OFF_KEY], (v) => ({ scope: v.scope as SiteRule["scope"], name: v.name as string }));
  }

  /** Rules in force now: enabled and not switched off for this session. */
  async activeRules(): Promise<SiteRule[]> {
    const [sites, off] = await Promise.all([this.enabledSites(), this.sessionOff()]);
    return sites.filter((s) => !off.some((o) => sameRule(o, s))).map(({ scope, name }) => ({ scope, name }));
  }

  enable(rule: SiteRule): Promise<void> {
    return this.serially(async () => {
      const sites = await this.enabledSites();
      if (!sites.some((s) => sameRule(s, rule))) {
        sites.push({ scope: rule.scope, name: rule.name, added: Date.now() });
        await this.local.set({ [SITES_KEY]: sites });
      }
      await this.clearSessionOff(rule);
    });
  }

  disable(rule: SiteRule): Promise<void> {
    return this.serially(async () => {
      const sites = await this.enabledSites();
      const kept = sites.filter((s) => !sameRule(s, rule));
      if (kept.length !== sites.length) await this.local.set({ [SITES_KEY]: kept });
      await this.clearSessionOff(rule);
      // The site off (the popup's switch or the options page's Remove): its HTTPS trust goes too (Firefox), so
      // enabling it again later asks again rather than bringing its certificate authority back unasked.
      if ((await readHttpsSites(this.local)).some((s) => sameRule(s, rule))) await setHttpsSite(this.local, rule, false);
    });
  }

  /** Switches off the rule covering a page (as `matchingRule` chose it) and, for an exact host, the enabled domain
   * rule that covers that host too: otherwise the page would still be taken, under the domain's rule. */
  switchOffForSession(rule: SiteRule): Promise<void> {
    return this.serially(async () => {
      const covering = rule.scope === "host"
        ? (await this.enabledSites()).filter((s) => s.scope === "domain" && ruleMatchesHost(s, rule.name))
        : [];
      const off = await this.sessionOff();
      const more = [rule, ...covering].filter((r) => !off.some((o) => sameRule(o, r)));
      if (more.length > 0) {
        off.push(...more.map(({ scope, name }) => ({ scope, name })));
        await this.session.set({ [SESSION_OFF_KEY]: off });
      }
    });
  }

  private async clearSessionOff(rule: SiteRule): Promise<void> {
    const off = await this.sessionOff();
    const kept = off.filter((o) => ruleKey(o) !== ruleKey(rule));
    if (kept.length !== off.length) await this.session.set({ [SESSION_OFF_KEY]: kept });
  }
}
