// The browser left at its default proxy setting ("system") and a helper started with a system proxy in its
// environment (a browser's helper shares the browser's): the helper says so in its hello, and requests that waited
// for that hello are left to the browser (which goes through the proxy), never fetched by the helper around it.
// The REAL helper process and a real origin server; ProxyPolicy wired to the accelerator as chromium-main.ts does.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Protocol } from "devtools-protocol";
import { Accelerator, type PageInfo } from "../../../extension/src/background/accelerator.js";
import { ProxyPolicy } from "../../../extension/src/background/proxy-policy.js";
import { HelperClient } from "../../../extension/src/bridge/helper-client.js";
import { HelperConnection } from "../../../extension/src/bridge/helper-connection.js";
import type { FetchResponder } from "../../../extension/src/deliver/fetch-responder.js";
import { HostSpeed } from "../../../extension/src/intercept/host-speed.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";
import { TabCounters } from "../../../extension/src/timings/tab-counters.js";
import { TimingStore } from "../../../extension/src/timings/timing-store.js";
import { eventually } from "../support/eventually.js";
import { OriginServer } from "../support/origin-server.js";
import { helperHost } from "../support/paths.js";
import { ProcessNativePort, testHelperEnv } from "../support/process-native-port.js";
import { testSite } from "../support/test-site.js";

const server = new OriginServer(testSite);
let port = 0;
before(async () => {
  assert.ok(existsSync(helperHost), `${helperHost} missing: run npm run setup`);
  port = await server.listen();
});
after(() => server.close());

function setUp(env: NodeJS.ProcessEnv) {
  const connection = new HelperConnection(() => new ProcessNativePort(helperHost, undefined, env), {
    extensionVersion: "0.1.0", browser: "chromium", helloTimeoutMs: 10_000, retryMissingMs: 5000, retryCrashMs: 0,
  });
  const speed = new HostSpeed();
  speed.setThreshold(null); // the loopback server is "fast": taken all the same
  const counters = new TabCounters();
  const accelerator = new Accelerator(speed, new HelperClient(connection), () => connection.state, counters, new TimingStore());
  const policy = new ProxyPolicy((blocked) => {
    accelerator.blockedBy = blocked ? "proxy_configured" : null;
  });
  policy.follow(connection);
  policy.browserMode("system");
  const answers: string[] = [];
  const responder: FetchResponder = {
    fulfill: (params: Protocol.Fetch.FulfillRequestRequest) => (answers.push(`fulfill ${params.requestId}`), Promise.resolve(true)),
    pass: (id: string) => (answers.push(`pass ${id}`), Promise.resolve()),
  };
  const page: PageInfo = { url: `http://127.0.0.1:${port}/`, topSite: "http://127.0.0.1", siteActive: true, addressSpace: "loopback", plainHttpHosts: [], privateBrowsing: false };
  const handle = (n: number): void => {
    const paused: PausedRequest = {
      interceptionId: `i${n}`, url: `http://127.0.0.1:${port}/img/${n}.png`, method: "GET", headers: [["Accept", "*/*"]],
      cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false,
    };
    accelerator.handle({ tabId: 1, paused, responder, page });
  };
  return { connection, counters, policy, answers, handle };
}

test("requests waiting for a helper that reports a system proxy go to the browser; none is fetched by the helper", async () => {
  const s = setUp({ ...testHelperEnv(), https_proxy: "http://proxy.corp.example:3128", http_proxy: "" });
  try {
    server.clearLog();
    // Handled before the helper answered hello (it is starting): they wait for it.
    for (const n of [1, 2, 3]) s.handle(n);
    await eventually("the three answered", () => s.answers.length >= 3, { timeoutMs: 15_000, everyMs: 10 }, () => s.answers);
    assert.deepEqual(s.answers.sort(), ["pass i1", "pass i2", "pass i3"]);
    assert.deepEqual(s.counters.get(1).passed, { proxy_configured: 3 });
    assert.equal(s.policy.blocked, true);
    assert.match(s.policy.notice ?? "", /This system is set to use a proxy \(proxy\.corp\.example:3128 \(https_proxy in the environment\)\)/);
    assert.deepEqual(server.log.filter((r) => r.owner.kind === "helper"), [], "nothing fetched around the proxy");
    // And a request handled once lanefetch is known to be off is left to the browser at once.
    s.handle(4);
    await eventually("the fourth answered", () => s.answers.length >= 4, { everyMs: 10 }, () => s.answers);
    assert.equal(s.answers[3], "pass i4");
    assert.deepEqual(s.counters.get(1).passed, { proxy_configured: 4 });
    assert.deepEqual(server.log.filter((r) => r.owner.kind === "helper"), []);
  } finally {
    s.connection.close();
  }
});

/** A KDE session set to detect a proxy automatically (WPAD alone: Windows' default, elsewhere), read by the helper
 * from its HOME, no other desktop's settings in the way; LANEFETCH_TEST_WPAD is the helper's WPAD lookup. */
function autoDetectingDesktop(wpad: string, kde = true): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(tmpdir(), "lf-wpad-home-"));
  after(() => rmSync(home, { recursive: true, force: true }));
  mkdirSync(join(home, ".config"));
  writeFileSync(join(home, ".config", "kioslaverc"), "[Proxy Settings]\nProxyType=3\n");
  return {
    ...testHelperEnv(), HOME: home, XDG_CURRENT_DESKTOP: "", DESKTOP_SESSION: "", DBUS_SESSION_BUS_ADDRESS: "",
    http_proxy: "", https_proxy: "", all_proxy: "", LANEFETCH_TEST_WPAD: wpad, ...(kde ? { KDE_FULL_SESSION: "true" } : {}),
  };
}

test("the system's auto-detection keeps lanefetch off only where the helper finds a WPAD server, named in the popup", async () => {
  for (const wpad of ["", "wpad.test.example"]) {
    const s = setUp(autoDetectingDesktop(wpad));
    try {
      assert.equal(await s.connection.ready(), true);
      assert.equal(s.policy.blocked, wpad !== "", `WPAD server ${JSON.stringify(wpad)}`);
      if (wpad) assert.match(s.policy.notice ?? "", /automatic proxy detection found a WPAD server at wpad\.test\.example/);
    } finally {
      s.connection.close();
    }
  }
});

test("the browser's own auto-detection: told to the helper, which looks for a WPAD server and says it found one", async () => {
  const s = setUp(autoDetectingDesktop("wpad.test.example", false)); // no system setting asks for WPAD: the browser's does
  try {
    s.policy.browserMode("autoDetect");
    assert.equal(await s.connection.ready(), true);
    await eventually("the WPAD server told", () => s.policy.blocked, { timeoutMs: 10_000, everyMs: 10 }, () => s.policy.notice);
    assert.match(s.policy.notice ?? "", /^The browser is set to detect a proxy automatically, and automatic proxy detection found a WPAD server at wpad\.test\.example/);
  } finally {
    s.connection.close();
  }
});
