// A host written with its trailing dot (http://www.example.com./, the fully qualified form) is the same site: the
// rule the popup makes on such a page covers it, and an enabled site covers its pages in that form.
import { test } from "node:test";
import assert from "node:assert/strict";
import { matchingRule, ruleChoicesFor } from "../../../extension/src/sites/site-rule.js";

test("rules chosen on a page whose host has a trailing dot cover that page", () => {
  const url = "http://www.example.com./a";
  const choices = ruleChoicesFor(url);
  assert.ok(choices);
  assert.deepEqual(matchingRule([choices.domain], url), choices.domain, "the domain rule");
  assert.deepEqual(matchingRule([choices.host], url), choices.host, "the exact-host rule");
  assert.deepEqual(choices.host, { scope: "host", name: "www.example.com" });
});

test("an enabled site covers its pages written with a trailing dot", () => {
  assert.ok(matchingRule([{ scope: "domain", name: "example.com" }], "http://www.example.com./"));
  assert.ok(matchingRule([{ scope: "host", name: "www.example.com" }], "https://www.example.com.:8443/"));
  assert.equal(matchingRule([{ scope: "domain", name: "example.com" }], "http://www.badexample.com./"), null);
});
