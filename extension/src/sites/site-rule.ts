// A site the user enabled: a registrable domain (with its subdomains) or one exact host.
import { getDomain, getPublicSuffix, parse } from "tldts";

export type SiteScope = "domain" | "host";

export interface SiteRule {
  scope: SiteScope;
  /** Lower-case registrable domain (scope "domain") or host name (scope "host"), without port. */
  name: string;
}

/** Host name of an http(s) URL (lower case, IPv6 in brackets, without the trailing dot of a fully qualified name:
 * www.example.com. is the same host), or null for any other URL. */
export function httpHost(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return null;
  return parsed.hostname.toLowerCase().replace(/\.$/, "");
}

/** The schemeful site (scheme://registrable domain) of an http(s) URL, or null for any other URL: what the browser
 * partitions its cache and connections by. */
export function schemefulSite(url: string): string | null {
  const host = httpHost(url);
  return host === null ? null : `${new URL(url).protocol}//${registrableDomain(host)}`;
}

/** The registrable domain of a host (public suffix list incl. private entries), or the host itself (IP, localhost). */
export function registrableDomain(host: string): string {
  const bare = host.startsWith("[") ? host : host.replace(/\.$/, "");
  return getDomain(bare, { allowPrivateDomains: true }) ?? bare;
}

/**
 * Whether a rule's name is a public suffix ("com", "co.uk", "github.io"; a name on no rule counts, as in the
 * list's default rule): HTTPS acceleration refuses such a site, whose certificate authority would be trusted for
 * every site under it (the helper refuses it too). IP addresses are not.
 */
export function isPublicSuffix(name: string): boolean {
  const bare = name.replace(/\.$/, "");
  return bare === "" || getPublicSuffix(bare, { allowPrivateDomains: true }) === bare;
}

/** The two rules a user can choose for the page at `url`: its registrable domain, or its exact host. A host that is
 * itself a public suffix on the list (path-style `s3.amazonaws.com`, `co.uk`) has no registrable domain: a domain
 * rule named by it would take every site under it, each another's, so only its exact host is offered (twice). */
export function ruleChoicesFor(url: string): { domain: SiteRule; host: SiteRule } | null {
  const host = httpHost(url);
  if (host === null) return null;
  const exact: SiteRule = { scope: "host", name: host };
  const listed = parse(host, { allowPrivateDomains: true });
  if (listed.domain === null && listed.publicSuffix === host && (listed.isIcann === true || listed.isPrivate === true)) {
    return { domain: exact, host: exact };
  }
  return { domain: { scope: "domain", name: registrableDomain(host) }, host: exact };
}

/** Whether a name is an IP address (IPv4, or IPv6 in brackets) rather than a host name: nothing is under it, so a
 * domain rule made on it (its registrable domain is itself) covers that address alone, and is said so. */
export function isAddressName(name: string): boolean {
  return /^[\d.]+$|^\[/.test(name);
}

export function ruleMatchesHost(rule: SiteRule, host: string): boolean {
  const name = rule.name.replace(/\.$/, ""); // (a rule made on a page written with the dot before it was dropped)
  if (rule.scope === "host") return host === name;
  return host === name || host.endsWith("." + name);
}

export function ruleKey(rule: SiteRule): string {
  return `${rule.scope}:${rule.name}`;
}

export function sameRule(a: SiteRule, b: SiteRule): boolean {
  return a.scope === b.scope && a.name === b.name;
}

/** The rule among `rules` that covers `url` (an exact-host rule wins over a domain rule), or null. */
export function matchingRule(rules: readonly SiteRule[], url: string): SiteRule | null {
  const host = httpHost(url);
  if (host === null) return null;
  const exact = rules.find((r) => r.scope === "host" && ruleMatchesHost(r, host));
  return exact ?? rules.find((r) => r.scope === "domain" && ruleMatchesHost(r, host)) ?? null;
}

export function isSiteRule(value: unknown): value is SiteRule {
  if (value === null || typeof value !== "object") return false;
  const v = value as Record<string, unknown>;
  return (v.scope === "domain" || v.scope === "host") && typeof v.name === "string" && v.name.length > 0;
}
