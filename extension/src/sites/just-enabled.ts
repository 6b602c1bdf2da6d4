// Sites the user just turned on, each taken once per enable, in both browsers: the extension then has the helper
// connect to the site ahead of any page (a TCP connection, a round-trip probe), so when the user's first page of
// the site starts (typically the reload right after enabling), its host's speed is already known and nothing
// waits for it: Chromium's gate does not stop a fast host's navigation, and Firefox routes the document at once
// (direct for a fast host) instead of holding it for the probe (intercept/speed-probe.ts: about one round trip).
//
// Theory of operation: a site counts as just enabled for JUST_ENABLED_MS after its enable time (the store's `added`)
// while it is active; it is taken once, keyed by rule and enable time (turned off and on again: taken again). The
// keys taken are remembered, at most MAX_TAKEN (older ones are past the window anyway). Pure: the callers keep the
// keys and act on the sites.
import type { EnabledSite } from "./site-store.js";
import { ruleKey, type SiteRule } from "./site-rule.js";

export const JUST_ENABLED_MS = 60_000;
const MAX_TAKEN = 256;

export interface JustEnabled {
  /** The sites to connect to ahead of any page now. */
  sites: EnabledSite[];
  /** The keys taken so far, this call's included: the next call's `taken`. */
  taken: string[];
}

export function justEnabled(enabled: readonly EnabledSite[], active: readonly SiteRule[], taken: readonly string[],
  now: number): JustEnabled {
  const activeKeys = new Set(active.map(ruleKey));
  const key = (site: EnabledSite): string => `${ruleKey(site)}@${site.added}`;
  const sites = enabled.filter((site) => now - site.added < JUST_ENABLED_MS && activeKeys.has(ruleKey(site)) &&
    !taken.includes(key(site)));
  return { sites, taken: [...taken, ...sites.map(key)].slice(-MAX_TAKEN) };
}

/** The URL a site's probe connects to when no tab shows it: its name over http (a TCP connection to port 80). */
export function probeUrl(site: SiteRule): string {
  return `http://${site.name}/`;
}
