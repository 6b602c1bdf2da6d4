import { test } from "node:test";
import assert from "node:assert/strict";
import { proxyBlocks } from "../../../extension/src/background/proxy-policy.js";

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
