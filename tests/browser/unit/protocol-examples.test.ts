// shared/protocol.examples.json against the schema, and the messages the extension builds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { protocolErrors } from "../support/protocol-validator.js";
import { asToExtension } from "../../../extension/src/bridge/messages.js";
import { repoRoot } from "../support/paths.js";
import { toHelperRequest, fromRequestPaused } from "../../../extension/src/intercept/paused-request.js";
import type { Batch } from "../../../extension/src/generated/protocol.js";

interface Examples {
  valid: unknown[];
  invalid: { why: string; message: unknown }[];
}
const examples = JSON.parse(readFileSync(resolve(repoRoot, "shared/protocol.examples.json"), "utf8")) as Examples;

test("every valid example validates", () => {
  assert.ok(examples.valid.length > 10);
  for (const message of examples.valid) assert.equal(protocolErrors.any(message), null, JSON.stringify(message));
});

test("every valid message to the extension reaches its dispatch (none dropped by its run-time check)", () => {
  const toExtension = examples.valid.filter((m) => protocolErrors.toExtension(m) === null);
  assert.ok(toExtension.length > 10);
  for (const message of toExtension) assert.notEqual(asToExtension(message), null, JSON.stringify(message));
});

test("every invalid example is rejected", () => {
  assert.ok(examples.invalid.length > 5);
  for (const { why, message } of examples.invalid) assert.notEqual(protocolErrors.any(message), null, why);
});

test("a batch built from a CDP Fetch.requestPaused event is a valid ToHost message", () => {
  const paused = fromRequestPaused({
    requestId: "interception-job-7.0",
    frameId: "F1",
    resourceType: "Image",
    request: {
      url: "http://a.test:8080/img/1.png",
      urlFragment: "#x",
      method: "GET",
      headers: { Accept: "image/avif,image/webp,*/*", Cookie: "a=1; b=2", "User-Agent": "Mozilla/5.0" },
      initialPriority: "Low",
      referrerPolicy: "strict-origin-when-cross-origin",
    },
  });
  const request = toHelperRequest("r1", paused);
  assert.equal(request.url, "http://a.test:8080/img/1.png", "fragment stays in the browser");
  assert.equal(request.resource_type, "image");
  assert.equal(request.priority, "Low");
  assert.deepEqual(request.headers.find(([n]) => n === "Cookie"), ["Cookie", "a=1; b=2"]);
  const batch: Batch = {
    type: "batch",
    batch_id: "b1",
    page: { url: "http://a.test:8080/", top_site: "http://a.test", address_space: "loopback", private_browsing: false },
    requests: [request],
  };
  assert.equal(protocolErrors.toHost(batch), null);
});

test("unknown CDP resource types and priorities still give valid requests", () => {
  const paused = fromRequestPaused({
    requestId: "1",
    frameId: "F",
    resourceType: "FedCM",
    request: { url: "https://x.example/", method: "GET", headers: {}, initialPriority: "Odd" as "Low", referrerPolicy: "no-referrer" },
  });
  const request = toHelperRequest("r2", paused);
  assert.equal(request.resource_type, "other");
  assert.equal(request.priority, undefined);
  assert.equal(protocolErrors.toHost({ type: "batch", batch_id: "b", page: { address_space: "public" }, requests: [request] }), null);
});
