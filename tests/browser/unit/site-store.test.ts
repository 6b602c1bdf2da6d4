// The stored site list (sites/site-store.ts) against an in-memory storage area.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SiteStore } from "../../../extension/src/sites/site-store.js";
import type { StorageAreaLike } from "../../../extension/src/sites/storage-area.js";
import { matchingRule } from "../../../extension/src/sites/site-rule.js";
import { readHttpsSites, setHttpsSite } from "../../../extension/src/proxy/https-sites.js";

function memoryArea(): StorageAreaLike & { items: Record<string, unknown> } {
  const items: Record<string, unknown> = {};
  return {
    items,
    get: (key) => Promise.resolve(key in items ? { [key]: structuredClone(items[key]) } : {}),
    set: (more) => Promise.resolve(void Object.assign(items, structuredClone(more))),
  };
}

const DOMAIN = { scope: "domain" as const, name: "example.com" };
const HOST = { scope: "host" as const, name: "www.example.com" };

test("removing a site (the options page's Remove) withdraws its HTTPS opt-in too", async () => {
  const local = memoryArea();
  const store = new SiteStore(local, memoryArea());
  await store.enable(DOMAIN);
  await setHttpsSite(local, DOMAIN, true);
  await store.disable(DOMAIN);
  assert.deepEqual(await readHttpsSites(local), [],
    "enabled again later, the site would get its certificate authority back without the user opting in again");
});

test("a site switched off for the session is off on its page even when a host rule and a domain rule both cover it", async () => {
  const store = new SiteStore(memoryArea(), memoryArea());
  await store.enable(DOMAIN);
  await store.enable(HOST);
  const url = "https://www.example.com/page";
  // The debugging bar cancelled on the page: the background switches off the rule that covers it.
  const rule = matchingRule(await store.activeRules(), url);
  assert.ok(rule);
  await store.switchOffForSession(rule);
  assert.equal(matchingRule(await store.activeRules(), url), null,
    "the domain rule still covered the page: the debugger attached again while the popup said it was off");
});

test("two sites switched off for the session at once (the debugging bar cancelled: every tab detaches) both stay off", async () => {
  const store = new SiteStore(memoryArea(), memoryArea());
  const other = { scope: "domain" as const, name: "other.org" };
  await store.enable(DOMAIN);
  await store.enable(other);
  await Promise.all([store.switchOffForSession(DOMAIN), store.switchOffForSession(other)]);
  assert.deepEqual((await store.sessionOff()).map((r) => r.name).sort(), ["example.com", "other.org"]);
  assert.deepEqual(await store.activeRules(), []);
});
