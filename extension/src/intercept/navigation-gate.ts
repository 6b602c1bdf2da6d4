// The DNR main-frame gate: top-level GET navigations to enabled sites are blocked in tabs the debugger has not
// attached to yet; the block (ERR_BLOCKED_BY_CLIENT) tells us to attach and navigate again, so not even the first
// subresource escapes interception. POST navigations go through unaccelerated (re-navigating would lose the body).
// Hosts known fast (host-speed.ts) are let through by a higher-priority allow rule: their pages are the browser's
// alone, with no debugger attached (attaching and intercepting the document cost more than a fast page takes).
import type { SiteRule } from "../sites/site-rule.js";

const FIRST_RULE_ID = 1;

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** At most this many fast hosts get an allow rule (the most recently measured first). */
export const MAX_FAST_HOSTS = 200;

/** A DNR rule as the gate writes it (the JSON shape updateSessionRules takes). */
export interface GateRule {
  id: number;
  priority: number;
  action: { type: "block" | "allow" };
  condition: {
    resourceTypes: ["main_frame"];
    requestMethods: ["get"];
    excludedTabIds?: number[];
    requestDomains?: string[];
    regexFilter?: string;
  };
}

function hostPattern(host: string): string {
  return `^https?://${escapeRegex(host)}(:[0-9]+)?/`;
}

export function gateRules(rules: readonly SiteRule[], openTabIds: readonly number[], fastHosts: readonly string[] = []): GateRule[] {
  const blocks = rules.map((rule, index): GateRule => {
    const condition: GateRule["condition"] = { resourceTypes: ["main_frame"], requestMethods: ["get"] };
    if (openTabIds.length) condition.excludedTabIds = [...openTabIds];
    if (rule.scope === "domain") condition.requestDomains = [rule.name];
    else condition.regexFilter = hostPattern(rule.name);
    return { id: FIRST_RULE_ID + index, priority: 1, action: { type: "block" }, condition };
  });
  const allows = fastHosts.slice(0, MAX_FAST_HOSTS).map((host, index): GateRule => ({
    id: FIRST_RULE_ID + rules.length + index,
    priority: 2,
    action: { type: "allow" },
    condition: { resourceTypes: ["main_frame"], requestMethods: ["get"], regexFilter: hostPattern(host) },
  }));
  return [...blocks, ...allows];
}

export const BLOCKED_BY_GATE = "net::ERR_BLOCKED_BY_CLIENT";

export class NavigationGate {
  private queue: Promise<void> = Promise.resolve();

  /** Replace the session rules (serialised: concurrent updates would race on rule ids). */
  update(rules: readonly SiteRule[], openTabIds: readonly number[], fastHosts: readonly string[] = []): Promise<void> {
    const next = this.queue.then(async () => {
      const existing = await chrome.declarativeNetRequest.getSessionRules();
      await chrome.declarativeNetRequest.updateSessionRules({
        removeRuleIds: existing.map((r) => r.id),
        addRules: gateRules(rules, openTabIds, fastHosts),
      });
    });
    this.queue = next.catch((e: unknown) => console.warn("lanefetch: gate update failed", e));
    return this.queue;
  }
}
