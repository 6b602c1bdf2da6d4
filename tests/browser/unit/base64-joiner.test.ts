// Base64Joiner joins the helper's base64 body pieces into the base64 of the whole body for Fetch.fulfillRequest.
// The old join decoded every piece and encoded the whole body again as soon as one piece (but the last) held a number
// of bytes that is not a multiple of 3: the body was held twice more (as bytes and as a binary string) at the end.
// Splits are random but seeded (fast-check is not installed): a failure names its seed and cuts.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { Base64Joiner, concatBase64 } from "../../../extension/src/deliver/base64-concat.js";
import { seededRandom } from "../support/seeded-random.js";


function cutsOf(rand: () => number, length: number, aligned: boolean): number[] {
  const cuts: number[] = [];
  let at = 0;
  while (at < length) {
    const r = rand();
    // Empty pieces, 1- and 2-byte pieces and long runs all come up.
    let size = r < 0.1 ? 0 : r < 0.3 ? 1 + Math.floor(rand() * 3) : Math.floor(rand() * 700);
    if (aligned) size -= size % 3;
    at = Math.min(length, at + size);
    cuts.push(at);
  }
  return cuts;
}

function piecesOf(body: Buffer, cuts: readonly number[]): string[] {
  let at = 0;
  return cuts.map((cut) => {
    const piece = body.subarray(at, cut).toString("base64");
    at = cut;
    return piece;
  });
}

/** Counts what atob and btoa are given while `run` runs. */
function counting<T>(t: TestContext, run: () => T): { result: T; decodedChars: number; encodedChars: number } {
  let decodedChars = 0;
  let encodedChars = 0;
  const { atob, btoa } = globalThis;
  t.mock.method(globalThis, "atob", (s: string) => ((decodedChars += s.length), atob(s)));
  t.mock.method(globalThis, "btoa", (s: string) => ((encodedChars += s.length), btoa(s)));
  try {
    return { result: run(), decodedChars, encodedChars };
  } finally {
    t.mock.restoreAll();
  }
}

test("random splits join into Buffer's base64 of the whole body; the end encodes at most its last 2 bytes", (t) => {
  for (let seed = 1; seed <= 300; seed++) {
    const rand = seededRandom(seed);
    const body = Buffer.from(Array.from({ length: Math.floor(rand() * 4000) }, () => Math.floor(rand() * 256)));
    const cuts = cutsOf(rand, body.length, false);
    const pieces = piecesOf(body, cuts);
    const joiner = new Base64Joiner();
    const pushed = counting(t, () => {
      for (const piece of pieces) assert.equal(joiner.push(piece), true);
    });
    assert.equal(joiner.bytes, body.length);
    const joined = counting(t, () => joiner.join());
    assert.equal(joined.result, body.toString("base64"), `seed ${seed}, cuts ${cuts.join(",")}`);
    // Each piece is handled once as it comes (only what follows a carried remainder is encoded again), and the end
    // never decodes or encodes the whole body once more.
    assert.ok(pushed.encodedChars <= body.length, `seed ${seed}: ${pushed.encodedChars} bytes encoded for a body of ${body.length}`);
    assert.equal(joined.decodedChars, 0, `seed ${seed}`);
    assert.ok(joined.encodedChars <= 2, `seed ${seed}: ${joined.encodedChars} bytes encoded at the end`);
  }
});

test("pieces of whole 3-byte groups are appended as they came: nothing decoded or encoded", (t) => {
  for (let seed = 1; seed <= 100; seed++) {
    const rand = seededRandom(seed);
    const body = Buffer.from(Array.from({ length: Math.floor(rand() * 4000) }, () => Math.floor(rand() * 256)));
    const cuts = cutsOf(rand, body.length, true);
    const pieces = piecesOf(body, cuts);
    const last = pieces.pop() ?? "";  // the body's own end may hold 1 or 2 bytes: padded, it ends the body
    const { result, decodedChars, encodedChars } = counting(t, () => {
      const joiner = new Base64Joiner();
      for (const piece of [...pieces, last]) joiner.push(piece);
      return joiner.join();
    });
    assert.equal(result, body.toString("base64"), `seed ${seed}, cuts ${cuts.join(",")}`);
    if (!last.endsWith("=")) {
      assert.equal(decodedChars, 0, `seed ${seed}`);
      assert.equal(encodedChars, 0, `seed ${seed}`);
    } else {
      assert.equal(decodedChars, last.length, `seed ${seed}: only the padded last piece is decoded`);
    }
  }
});

test("a piece that is not base64 is refused and changes nothing; join can be asked midway", () => {
  const joiner = new Base64Joiner();
  assert.equal(joiner.push(Buffer.from("ab").toString("base64")), true);
  for (const bad of ["abc", "a=bc", "ab!=", "====", "\u00e9AAA"]) assert.equal(joiner.push(bad), false, bad);
  assert.equal(joiner.bytes, 2);
  assert.equal(joiner.join(), Buffer.from("ab").toString("base64"));
  joiner.push(Buffer.from("cdef").toString("base64"));
  assert.equal(joiner.join(), Buffer.from("abcdef").toString("base64"));
  joiner.clear();
  assert.equal(joiner.bytes, 0);
  assert.equal(joiner.join(), "");
  assert.throws(() => concatBase64(["Zm9v", "not base64"]), /not base64/);
});
