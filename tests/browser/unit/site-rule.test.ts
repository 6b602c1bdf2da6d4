import { test } from "node:test";
import assert from "node:assert/strict";
import { isAddressName, isPublicSuffix, matchingRule, registrableDomain, ruleChoicesFor, ruleMatchesHost } from "../../../extension/src/sites/site-rule.js";

test("registrable domain follows the public suffix list (private entries too)", () => {
  assert.equal(registrableDomain("www.bbc.co.uk"), "bbc.co.uk");
  assert.equal(registrableDomain("user.github.io"), "user.github.io");
  assert.equal(registrableDomain("img.a.test"), "a.test");
  assert.equal(registrableDomain("127.0.0.1"), "127.0.0.1");
  assert.equal(registrableDomain("localhost"), "localhost");
});

test("choices for a page: its registrable domain or its exact host; none for non-http pages", () => {
  assert.deepEqual(ruleChoicesFor("https://news.example.co.uk:8443/a?b"), {
    domain: { scope: "domain", name: "example.co.uk" },
    host: { scope: "host", name: "news.example.co.uk" },
  });
  assert.equal(ruleChoicesFor("chrome://newtab/"), null);
  assert.equal(ruleChoicesFor("not a url"), null);
});

test("domain rules cover subdomains, host rules only the host", () => {
  const domain = { scope: "domain", name: "example.com" } as const;
  const host = { scope: "host", name: "www.example.com" } as const;
  assert.ok(ruleMatchesHost(domain, "example.com"));
  assert.ok(ruleMatchesHost(domain, "a.b.example.com"));
  assert.ok(!ruleMatchesHost(domain, "badexample.com"));
  assert.ok(ruleMatchesHost(host, "www.example.com"));
  assert.ok(!ruleMatchesHost(host, "x.www.example.com"));
});

test("a page whose host is itself a public suffix (path-style S3, co.uk): only that host is offered, never the many sites under it", () => {
  for (const [url, other] of [
    ["https://s3.amazonaws.com/bucket/index.html", "https://someone-else.s3.amazonaws.com/"],
    ["http://co.uk/", "http://bbc.co.uk/"],
    ["https://foo.kawasaki.jp/", "https://bar.foo.kawasaki.jp/"],
  ] as const) {
    const choices = ruleChoicesFor(url);
    assert.ok(choices !== null, url);
    for (const rule of [choices.domain, choices.host]) {
      assert.ok(matchingRule([rule], url) !== null, `${url}: ${JSON.stringify(rule)} covers the page`);
      assert.equal(matchingRule([rule], other), null, `${url}: ${JSON.stringify(rule)} covers another site, ${other}`);
    }
  }
  // Names outside the list keep their domain rule: localhost covers its subdomains, as before.
  assert.deepEqual(ruleChoicesFor("http://localhost:3000/")?.domain, { scope: "domain", name: "localhost" });
});

test("an address's domain rule is itself alone (the popup and options page say no subdomains for it)", () => {
  for (const url of ["http://192.168.1.20:8080/", "http://[fd00::1]/", "http://[::ffff:127.0.0.1]/"]) {
    const choices = ruleChoicesFor(url);
    assert.ok(choices !== null && isAddressName(choices.domain.name), url);
    assert.ok(!matchingRule([choices.domain], url.replace("//", "//a.")), `${url}: nothing under it`);
  }
  for (const name of ["example.com", "localhost", "1.example", "xn--bcher-kva.example"]) assert.ok(!isAddressName(name), name);
});

test("an exact-host rule wins over a domain rule; other schemes never match", () => {
  const rules = [{ scope: "domain", name: "example.com" }, { scope: "host", name: "www.example.com" }] as const;
  assert.deepEqual(matchingRule(rules, "http://www.example.com/"), rules[1]);
  assert.deepEqual(matchingRule(rules, "http://cdn.example.com/"), rules[0]);
  assert.equal(matchingRule(rules, "ftp://www.example.com/"), null);
  assert.equal(matchingRule(rules, "http://example.org/"), null);
});

test("public suffixes (refused for HTTPS acceleration) per the list, private entries too; addresses are none", () => {
  for (const name of ["com", "co.uk", "github.io", "foo.ck", "com.", ""]) assert.equal(isPublicSuffix(name), true, name);
  for (const name of ["example.com", "bbc.co.uk", "user.github.io", "www.ck", "127.0.0.1", "[::1]"]) {
    assert.equal(isPublicSuffix(name), false, name);
  }
});
