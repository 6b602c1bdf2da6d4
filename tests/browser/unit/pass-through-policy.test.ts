import { test } from "node:test";
import assert from "node:assert/strict";
import { decide, type PageContext } from "../../../extension/src/intercept/pass-through-policy.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";

const page: PageContext = { siteActive: true, addressSpace: "public", plainHttpHosts: [] };

function request(change: Partial<PausedRequest> = {}): PausedRequest {
  return {
    interceptionId: "i1", url: "https://cdn.example.com/a.js", method: "GET", headers: [["Accept", "*/*"]],
    cdpResourceType: "Script", priority: "High", frameId: "F", hasBody: false, ...change,
  };
}

test("a plain GET subresource of an active site goes to the helper", () => {
  assert.deepEqual(decide(request(), page), { take: true });
  assert.deepEqual(decide(request({ cdpResourceType: "Document" }), page), { take: true });
});

test("what goes to the browser, and why", () => {
  const cases: [Partial<PausedRequest>, PageContext, string][] = [
    [{}, { ...page, siteActive: false }, "site_off"],
    [{ method: "OPTIONS", cdpResourceType: "Preflight" }, page, "preflight"],
    [{ method: "POST", hasBody: true, cdpResourceType: "Fetch" }, page, "method"],
    [{ method: "HEAD" }, page, "method"],
    [{ cdpResourceType: "WebSocket", url: "wss://x.example.com/" }, page, "websocket"],
    [{ url: "blob:https://x/1" }, page, "not_http"],
    [{ cdpResourceType: "EventSource" }, page, "streaming"],
    [{ headers: [["Accept", "text/event-stream"]], cdpResourceType: "Fetch" }, page, "streaming"],
    [{ cdpResourceType: "Media", url: "https://x.example.com/v.mp4" }, page, "range"],
    [{ headers: [["Range", "bytes=0-"]], cdpResourceType: "Fetch" }, page, "range"],
    [{ url: "http://192.168.1.1/admin.png" }, page, "private_target"],
    [{ url: "http://127.0.0.1:8080/x" }, page, "private_target"],
    [{ url: "http://10.0.0.8/", cdpResourceType: "Document" }, { ...page, addressSpace: "private" }, "local_document"],
  ];
  for (const [change, ctx, reason] of cases) {
    assert.deepEqual(decide(request(change), ctx), { take: false, reason }, JSON.stringify(change));
  }
});

test("a loopback page may have the helper reach loopback and private targets", () => {
  assert.deepEqual(decide(request({ url: "http://127.0.0.1:8080/x" }), { siteActive: true, addressSpace: "loopback", plainHttpHosts: [] }), { take: true });
  assert.deepEqual(decide(request({ url: "http://10.0.0.2/x" }), { siteActive: true, addressSpace: "private", plainHttpHosts: [] }), { take: true });
});
