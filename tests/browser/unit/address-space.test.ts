import { test } from "node:test";
import assert from "node:assert/strict";
import { addressSpaceOfHost, addressSpaceOfUrl, mayReach } from "../../../extension/src/sites/address-space.js";

test("IP literals", () => {
  assert.equal(addressSpaceOfHost("127.0.0.1"), "loopback");
  assert.equal(addressSpaceOfHost("127.9.9.9"), "loopback");
  assert.equal(addressSpaceOfHost("10.1.2.3"), "private");
  assert.equal(addressSpaceOfHost("172.16.0.1"), "private");
  assert.equal(addressSpaceOfHost("172.32.0.1"), "public");
  assert.equal(addressSpaceOfHost("192.168.1.1"), "private");
  assert.equal(addressSpaceOfHost("169.254.169.254"), "private");
  assert.equal(addressSpaceOfHost("8.8.8.8"), "public");
  assert.equal(addressSpaceOfHost("[::1]"), "loopback");
  assert.equal(addressSpaceOfHost("[fd00::1]"), "private");
  assert.equal(addressSpaceOfHost("[fe80::1]"), "private");
  assert.equal(addressSpaceOfHost("[::ffff:7f00:1]"), "loopback");
  assert.equal(addressSpaceOfHost("[2001:db8::1]"), "public");
});

test("special-use names", () => {
  assert.equal(addressSpaceOfHost("localhost"), "loopback");
  assert.equal(addressSpaceOfHost("app.localhost"), "loopback");
  assert.equal(addressSpaceOfHost("a.test"), "loopback");
  assert.equal(addressSpaceOfHost("printer.local"), "private");
  assert.equal(addressSpaceOfHost("intranet"), "private");
  assert.equal(addressSpaceOfHost("router.home.arpa"), "private");
  assert.equal(addressSpaceOfHost("example.com"), "public");
  assert.equal(addressSpaceOfUrl("http://[::1]:8080/"), "loopback");
  assert.equal(addressSpaceOfUrl("data:text/plain,hi"), null);
});

test("a page reaches its own address space and more public ones only", () => {
  assert.ok(mayReach("public", "public"));
  assert.ok(!mayReach("public", "private"));
  assert.ok(!mayReach("public", "loopback"));
  assert.ok(mayReach("private", "public"));
  assert.ok(mayReach("private", "private"));
  assert.ok(!mayReach("private", "loopback"));
  assert.ok(mayReach("loopback", "private"));
});
