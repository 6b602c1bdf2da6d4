import { test } from "node:test";
import assert from "node:assert/strict";
import { FIREFOX_PROXY_RECHECK_MS, proxyBlocks, watchProxy } from "../../../extension/src/background/proxy-policy.js";

test("fixed proxies and PAC scripts keep lanefetch off; direct and system settings do not", () => {
  assert.equal(proxyBlocks("fixed_servers"), true);
  assert.equal(proxyBlocks("pac_script"), true);
  assert.equal(proxyBlocks("direct"), false);
  assert.equal(proxyBlocks("system"), false);
  assert.equal(proxyBlocks("auto_detect"), false);
  assert.equal(proxyBlocks("manual"), true, "Firefox: manual proxy");
  assert.equal(proxyBlocks("autoConfig"), true, "Firefox: PAC");
  assert.equal(proxyBlocks("none"), false);
  assert.equal(proxyBlocks(undefined), false);
});

test("Firefox: a proxy set in its own settings (no onChange: only extensions' changes fire it) is found by the recheck", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  const g = globalThis as { chrome?: unknown };
  const before = g.chrome;
  const setting: { value: { proxyType: string } } = { value: { proxyType: "system" } };
  g.chrome = { proxy: { settings: { get: () => Promise.resolve(setting), onChange: { addListener: () => undefined } } } };
  try {
    const heard: boolean[] = [];
    await watchProxy((blocked) => heard.push(blocked), FIREFOX_PROXY_RECHECK_MS);
    assert.deepEqual(heard, [false]);
    setting.value = { proxyType: "manual" }; // the user chose a manual proxy in Firefox's settings
    t.mock.timers.tick(FIREFOX_PROXY_RECHECK_MS);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(heard, [false, true], "lanefetch turned off within the recheck interval");
  } finally {
    g.chrome = before;
  }
});
