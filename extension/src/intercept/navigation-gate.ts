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

/** The session rules, written one update at a time (concurrent updates would race on rule ids), and always the newest
 * state decided: the policy decides gate states in event order, but each write runs in the queue of the tab whose
 * event caused it, behind that tab's earlier commands (a detach, an attach), so writes can run in another order than
 * they were decided. Writing the state given to a write would let an older one land last and undo a newer (an
 * attached tab blocked again, its navigation's block taken as stale). So the state is noted when decided (`want`),
 * and each write writes the newest noted. */
export class NavigationGate {
  private queue: Promise<void> = Promise.resolve();
  private wanted: GateRule[] = [];

  /** Note the newest gate state, as the policy decides it (synchronously, in decision order). */
  want(rules: readonly SiteRule[], openTabIds: readonly number[], fastHosts: readonly string[] = []): void {
    this.wanted = gateRules(rules, openTabIds, fastHosts);
  }

  /** Write the newest state noted by the time this write runs; resolves when it is in force. */
  write(): Promise<void> {
    const next = this.queue.then(async () => {
      const addRules = this.wanted;
      const existing = await chrome.declarativeNetRequest.getSessionRules();
      await chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: existing.map((r) => r.id), addRules });
    });
    this.queue = next.catch((e: unknown) => console.warn("lanefetch: gate update failed", e));
    return this.queue;
  }
}
