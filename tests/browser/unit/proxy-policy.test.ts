import { test } from "node:test";
import assert from "node:assert/strict";
import type { HelperState } from "../../../extension/src/bridge/helper-state.js";
import type { ToExtension, ToHost } from "../../../extension/src/generated/protocol.js";
import {
  FIREFOX_PROXY_RECHECK_MS, PROXY_NOTICE, ProxyPolicy, proxyBlocks, watchProxy,
} from "../../../extension/src/background/proxy-policy.js";

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

test("the system's proxy settings with a system proxy set keep lanefetch off, as a proxy set in the browser does", () => {
  const proxy = "proxy.corp.example:3128 (https_proxy in the environment)";
  assert.equal(proxyBlocks("system", proxy), true, "Chromium's and Firefox's default setting");
  for (const mode of ["direct", "none", "auto_detect", "autoDetect", undefined]) {
    assert.equal(proxyBlocks(mode, proxy), false, `${String(mode)}: the browser goes around the system proxy itself`);
  }
  assert.equal(proxyBlocks("fixed_servers", proxy), true);
});

test("ProxyPolicy: the helper's hello and the browser's setting together; the popup names the system proxy", () => {
  const heard: boolean[] = [];
  const policy = new ProxyPolicy((blocked) => heard.push(blocked));
  const listeners: ((state: HelperState) => void)[] = [];
  policy.follow({ onStateChange: (l) => listeners.push(l), onMessage: () => undefined, send: () => true });
  const helper = (state: HelperState): void => listeners.forEach((l) => l(state));
  const notice = (): string => policy.notice ?? "";

  policy.browserMode("system");
  assert.equal(policy.blocked, false, "no helper has said anything yet");
  assert.equal(policy.notice, null);
  helper({ status: "connected", version: "0.1.0", capabilities: [], systemProxy: "proxy.corp.example:3128 (https_proxy in the environment)" });
  assert.deepEqual(heard, [true], "told at once, as the hello is taken");
  assert.match(notice(), /^This system is set to use a proxy \(proxy\.corp\.example:3128 \(https_proxy in the environment\)\), which the browser follows: lanefetch stays off/);
  assert.doesNotMatch(notice(), /The browser is set to use a proxy/);

  helper({ status: "disconnected", message: "the helper exited" });
  assert.equal(policy.blocked, true, "what the last hello said stays known while the helper is away");
  policy.browserMode("direct");
  assert.deepEqual(heard, [true, false], "the browser set to connect directly: lanefetch back on");
  policy.browserMode("fixed_servers");
  assert.equal(policy.notice, PROXY_NOTICE, "a proxy set in the browser is named as the browser's");
  policy.browserMode("system");
  assert.deepEqual(heard, [true, false, true]);
  assert.equal(policy.blocked, true);
  helper({ status: "connected", version: "0.1.0", capabilities: [] });
  assert.deepEqual(heard, [true, false, true, false], "a helper that finds no system proxy (it was removed): on again");
  assert.equal(policy.notice, null);
});

test("Firefox: a proxy set in its own settings (no onChange: only extensions' changes fire it) is found by the recheck", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  const g = globalThis as { chrome?: unknown };
  const before = g.chrome;
  const setting: { value: { proxyType: string } } = { value: { proxyType: "system" } };
  g.chrome = { proxy: { settings: { get: () => Promise.resolve(setting), onChange: { addListener: () => undefined } } } };
  try {
    const heard: boolean[] = [];
    const policy = new ProxyPolicy((blocked) => heard.push(blocked));
    await watchProxy((mode) => policy.browserMode(mode), FIREFOX_PROXY_RECHECK_MS);
    assert.equal(policy.blocked, false);
    setting.value = { proxyType: "manual" }; // the user chose a manual proxy in Firefox's settings
    t.mock.timers.tick(FIREFOX_PROXY_RECHECK_MS);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(heard, [true], "lanefetch turned off within the recheck interval");
  } finally {
    g.chrome = before;
  }
});

test("ProxyPolicy: a system proxy set or removed while the helper runs (its system_proxy message) turns lanefetch off and on", () => {
  const heard: boolean[] = [];
  const policy = new ProxyPolicy((blocked) => heard.push(blocked));
  const states: ((state: HelperState) => void)[] = [];
  const messages: ((message: ToExtension) => void)[] = [];
  policy.follow({ onStateChange: (l) => states.push(l), onMessage: (l) => messages.push(l), send: () => true });
  policy.browserMode("system");
  states.forEach((l) => l({ status: "connected", version: "0.1.0", capabilities: [] }));
  assert.equal(policy.blocked, false);
  messages.forEach((l) => l({ type: "system_proxy", system_proxy: "GNOME's proxy settings (manual)" }));
  assert.deepEqual(heard, [true]);
  assert.match(policy.notice ?? "", /^This system is set to use a proxy \(GNOME's proxy settings \(manual\)\)/);
  messages.forEach((l) => l({ type: "pong", nonce: "n" }));
  assert.deepEqual(heard, [true], "other messages say nothing of it");
  messages.forEach((l) => l({ type: "system_proxy" }));
  assert.deepEqual(heard, [true, false]);
});

test("automatic proxy detection keeps lanefetch off only where the helper found a WPAD server", () => {
  const wpad = "wpad.corp.example";
  for (const mode of ["auto_detect", "autoDetect"]) {
    assert.equal(proxyBlocks(mode), false, `${mode}: no WPAD server found (most networks have none)`);
    assert.equal(proxyBlocks(mode, undefined, wpad), true, `${mode}: the browser asks the WPAD server found`);
  }
  assert.equal(proxyBlocks("direct", undefined, wpad), false);
  assert.equal(proxyBlocks("system", undefined, wpad), false, "a server found for the browser's setting, not the system's");
});

test("ProxyPolicy: the system's auto-detection with a WPAD server found is named as the reason", () => {
  const heard: boolean[] = [];
  const policy = new ProxyPolicy((blocked) => heard.push(blocked));
  const states: ((state: HelperState) => void)[] = [];
  policy.follow({ onStateChange: (l) => states.push(l), onMessage: () => undefined, send: () => true });
  policy.browserMode("system");
  states.forEach((l) => l({
    status: "connected", version: "0.1.0", capabilities: [],
    systemProxy: "proxy auto-detection, WPAD (Windows' proxy settings)", wpad: "wpad.corp.example",
  }));
  assert.deepEqual(heard, [true]);
  assert.match(policy.notice ?? "", /^This system is set to detect a proxy automatically, which the browser follows, and automatic proxy detection found a WPAD server at wpad\.corp\.example: lanefetch stays off/);
});

test("ProxyPolicy: the browser's own auto-detection is told to the helper, and a WPAD server it finds keeps lanefetch off", () => {
  const heard: boolean[] = [];
  const policy = new ProxyPolicy((blocked) => heard.push(blocked));
  const states: ((state: HelperState) => void)[] = [];
  const messages: ((message: ToExtension) => void)[] = [];
  const sent: ToHost[] = [];
  policy.follow({ onStateChange: (l) => states.push(l), onMessage: (l) => messages.push(l), send: (m) => (sent.push(m), true) });
  policy.browserMode("autoDetect");
  assert.deepEqual(sent, [{ type: "auto_detect", on: true }], "told at once where a helper is there");
  states.forEach((l) => l({ status: "connected", version: "0.1.0", capabilities: [] }));
  assert.deepEqual(sent.slice(1), [{ type: "auto_detect", on: true }], "and to each helper after its hello (it assumes off)");
  assert.equal(policy.blocked, false, "no WPAD server found (yet)");
  messages.forEach((l) => l({ type: "system_proxy", wpad: "wpad.lan.example" }));
  assert.deepEqual(heard, [true]);
  assert.match(policy.notice ?? "", /^The browser is set to detect a proxy automatically, and automatic proxy detection found a WPAD server at wpad\.lan\.example: lanefetch stays off/);
  policy.browserMode("autoDetect");
  assert.equal(sent.length, 2, "no change: nothing told");
  policy.browserMode("none");
  assert.deepEqual(sent.slice(2), [{ type: "auto_detect", on: false }]);
  assert.deepEqual(heard, [true, false], "no proxy: the WPAD server does not matter");
  states.forEach((l) => l({ status: "connected", version: "0.1.0", capabilities: [] }));
  assert.equal(sent.length, 3, "a new helper is not told of a setting that is off");
});
