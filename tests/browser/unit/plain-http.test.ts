import { test } from "node:test";
import assert from "node:assert/strict";
import { FrameDocuments, plainHttpAllowed, plainHttpHosts } from "../../../extension/src/intercept/plain-http.js";
import { decide, type PageContext } from "../../../extension/src/intercept/pass-through-policy.js";
import type { PausedRequest } from "../../../extension/src/intercept/paused-request.js";

function request(url: string, change: Partial<PausedRequest> = {}): PausedRequest {
  return { interceptionId: "i1", url, method: "GET", headers: [], cdpResourceType: "Image", priority: "Low", frameId: "F", hasBody: false, ...change };
}

function ctx(documents: string[]): PageContext {
  return { siteActive: true, addressSpace: "public", plainHttpHosts: plainHttpHosts(documents) };
}

test("an http page's own host is taken over plain http, ports aside; another host is the browser's (its HSTS may upgrade it)", () => {
  const page = ctx(["http://shop.example:8080/index.html"]);
  assert.deepEqual(decide(request("http://shop.example/a.png"), page), { take: true });
  assert.deepEqual(decide(request("http://shop.example:9000/a.png"), page), { take: true });
  for (const other of ["http://cdn.example/a.png", "http://www.shop.example/a.png", "http://shop.example.evil/a.png"]) {
    assert.deepEqual(decide(request(other), page), { take: false, reason: "plain_http" }, other);
  }
});

test("an https page's http subresources are all the browser's, even on its own host; https ones are not concerned", () => {
  const page = ctx(["https://shop.example/"]);
  assert.deepEqual(decide(request("http://shop.example/a.png"), page), { take: false, reason: "plain_http" });
  assert.deepEqual(decide(request("https://shop.example/a.png"), page), { take: true });
  assert.deepEqual(decide(request("https://cdn.example/a.png"), ctx([])), { take: true });
});

test("a frame's own http document counts for its host, beside the top-level page's", () => {
  const page = ctx(["https://shop.example/", "http://widget.example/frame.html"]);
  assert.deepEqual(decide(request("http://widget.example/w.js"), page), { take: true });
  assert.deepEqual(decide(request("http://shop.example/a.png"), page), { take: false, reason: "plain_http" });
  assert.deepEqual(decide(request("http://ads.example/a.png"), page), { take: false, reason: "plain_http" });
});

test("a plain-http document with no evidence (the top-level one itself) goes to the browser", () => {
  assert.deepEqual(decide(request("http://shop.example/", { cdpResourceType: "Document" }), ctx([])), { take: false, reason: "plain_http" });
});

test("IP address literals are never HSTS hosts", () => {
  assert.ok(plainHttpAllowed("http://93.184.216.34/a.png", []));
  assert.ok(plainHttpAllowed("http://[2001:db8::1]:8080/a.png", []));
  assert.ok(!plainHttpAllowed("http://93.184.216.34.example/a.png", []));
  assert.ok(!plainHttpAllowed("http://1.2.3/a.png", []) || new URL("http://1.2.3/").hostname === "1.2.0.3", "URL canonicalises short IPv4 forms");
});

test("plainHttpHosts keeps only http documents' hosts, lower case, once", () => {
  assert.deepEqual(plainHttpHosts(["http://A.Example/x", "https://b.example/", "http://a.example:81/", "about:blank", "", null, undefined, "nonsense"]),
    ["a.example"]);
});

test("FrameDocuments keeps each frame's newest document, not the main frame's nor subresources", () => {
  const frames = new FrameDocuments();
  frames.paused("F1", "Document", "http://widget.example/", "MAIN");
  frames.paused("F1", "Script", "http://other.example/x.js", "MAIN");
  frames.paused("MAIN", "Document", "http://top.example/", "MAIN");
  assert.equal(frames.documentOf("F1"), "http://widget.example/");
  assert.equal(frames.documentOf("MAIN"), undefined);
  // Upgraded by HSTS: the browser's redirect to https is paused again for the same frame.
  frames.paused("F1", "Document", "https://widget.example/", "MAIN");
  assert.deepEqual(plainHttpHosts([frames.documentOf("F1")]), []);
});
