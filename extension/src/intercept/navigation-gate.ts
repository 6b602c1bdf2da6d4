// The DNR main-frame gate: top-level GET navigations to enabled sites are blocked in tabs the debugger has not
// attached to yet; the block (ERR_BLOCKED_BY_CLIENT) tells us to attach and navigate again, so not even the first
// subresource escapes interception. POST navigations go through unaccelerated (re-navigating would lose the body).
import type { SiteRule } from "../sites/site-rule.js";

const FIRST_RULE_ID = 1;

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A DNR rule as the gate writes it (the JSON shape updateSessionRules takes). */
export interface GateRule {
  id: number;
  priority: number;
  action: { type: "block" };
  condition: {
    resourceTypes: ["main_frame"];
    requestMethods: ["get"];
    excludedTabIds?: number[];
    requestDomains?: string[];
    regexFilter?: string;
  };
}

export function gateRules(rules: readonly SiteRule[], openTabIds: readonly number[]): GateRule[] {
  return rules.map((rule, index) => {
    const condition: GateRule["condition"] = { resourceTypes: ["main_frame"], requestMethods: ["get"] };
    if (openTabIds.length) condition.excludedTabIds = [...openTabIds];
    if (rule.scope === "domain") condition.requestDomains = [rule.name];
    else condition.regexFilter = `^https?://${escapeRegex(rule.name)}(:[0-9]+)?/`;
    return {
      id: FIRST_RULE_ID + index,
      priority: 1,
      action: { type: "block" },
      condition,
    };
  });
}

export const BLOCKED_BY_GATE = "net::ERR_BLOCKED_BY_CLIENT";

export class NavigationGate {
  private queue: Promise<void> = Promise.resolve();

  /** Replace the session rules (serialised: concurrent updates would race on rule ids). */
  update(rules: readonly SiteRule[], openTabIds: readonly number[]): Promise<void> {
    const next = this.queue.then(async () => {
      const existing = await chrome.declarativeNetRequest.getSessionRules();
      await chrome.declarativeNetRequest.updateSessionRules({
        removeRuleIds: existing.map((r) => r.id),
        addRules: gateRules(rules, openTabIds),
      });
    });
    this.queue = next.catch((e: unknown) => console.warn("lanefetch: gate update failed", e));
    return this.queue;
  }
}
