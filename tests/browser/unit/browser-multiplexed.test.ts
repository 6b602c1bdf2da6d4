// Origins the browser reaches over its own warm h2/h3 connection (their requests go to it), and where the sightings
// come from: the browser's own network responses, never the helper's fulfilled ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BrowserMultiplexed, MULTIPLEXED_FOR_MS, multiplexes } from "../../../extension/src/intercept/browser-multiplexed.js";
import { CdpNetworkLog } from "../../../extension/src/timings/cdp-network-log.js";

test("h2 and h3 multiplex; HTTP/1.1 and the rest do not", () => {
  for (const p of ["h2", "h3", "h3-29"]) assert.equal(multiplexes(p), true, p);
  for (const p of ["http/1.1", "http/1.0", "data", "blob", "", null, undefined]) assert.equal(multiplexes(p), false, String(p));
});

test("an origin seen over h2 is left to the browser, per origin, until the sighting ages out", () => {
  let now = 1_000;
  const m = new BrowserMultiplexed(() => now);
  m.observe("https://a.test/doc.html", "h2");
  m.observe("https://b.test/doc.html", "http/1.1");
  assert.match(m.detail("https://a.test/style.css") ?? "", /HTTP\/2 connection to https:\/\/a\.test/);
  assert.equal(m.detail("https://b.test/style.css"), null, "HTTP/1.1: the helper pipelines");
  assert.equal(m.detail("http://a.test/style.css"), null, "another origin (scheme)");
  assert.equal(m.detail("https://a.test:8443/x"), null, "another origin (port)");
  assert.equal(m.detail("not a url"), null);
  now += MULTIPLEXED_FOR_MS;
  assert.notEqual(m.detail("https://a.test/x"), null, "still fresh at the limit");
  m.observe("https://a.test/img.png", "h3");  // renewed by any multiplexed response
  now += MULTIPLEXED_FOR_MS;
  assert.match(m.detail("https://a.test/x") ?? "", /HTTP\/3/);
  now += 1;
  assert.equal(m.detail("https://a.test/x"), null, "aged out");
});

test("the network log reports a response's protocol only when it came from the network", () => {
  const seen: [string, string][] = [];
  const log = new CdpNetworkLog(() => undefined, undefined, (url, protocol) => seen.push([url, protocol]));
  const response = (url: string, extra: Record<string, unknown>): Record<string, unknown> => ({
    url, status: 200, statusText: "OK", headers: {}, mimeType: "text/html", connectionId: 1, encodedDataLength: 10,
    remoteIPAddress: "10.0.0.2", remotePort: 443, protocol: "h2", ...extra,
  });
  log.handle("Network.responseReceived", { requestId: "1", timestamp: 1, type: "Document", response: response("https://a.test/", {}) });
  log.handle("Network.responseReceived", { requestId: "2", timestamp: 1, response: response("https://b.test/f", { remoteIPAddress: "" }) });
  log.handle("Network.responseReceived", { requestId: "3", timestamp: 1, response: response("https://c.test/f", { fromDiskCache: true }) });
  log.handle("Network.responseReceived", { requestId: "4", timestamp: 1, response: response("https://d.test/f", { fromServiceWorker: true }) });
  log.handle("Network.responseReceived", { requestId: "5", timestamp: 1, response: response("https://e.test/f", { protocol: "http/1.1" }) });
  assert.deepEqual(seen, [["https://a.test/", "h2"], ["https://e.test/f", "http/1.1"]]);
});
