// The generated icons are real PNGs of the sizes the manifest names; the 128 px store icon keeps the Chrome Web
// Store's 16 px transparent margin around 96 px of artwork.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inflateSync } from "node:zlib";
import { iconPng } from "../../../extension/build/icons.js";

/** Width, height and RGBA rows of a PNG written by iconPng (one IDAT, filter 0 on every row). */
function decode(png: Buffer): { width: number; height: number; alpha: (x: number, y: number) => number } {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.equal(png.toString("ascii", 12, 16), "IHDR");
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const idat = png.indexOf("IDAT");
  const raw = inflateSync(png.subarray(idat + 4, idat + 4 + png.readUInt32BE(idat - 4)));
  assert.equal(raw.length, (width * 4 + 1) * height);
  return { width, height, alpha: (x, y) => raw[y * (width * 4 + 1) + 1 + x * 4 + 3] ?? -1 };
}

test("icons: the four sizes, opaque artwork, a transparent store margin at 128 px", () => {
  for (const size of [16, 32, 48, 128]) {
    const { width, height, alpha } = decode(iconPng(size));
    assert.deepEqual([width, height], [size, size]);
    assert.equal(alpha(size / 2, size / 2), 255, `${size}: centre is opaque`);
  }
  const { alpha } = decode(iconPng(128));
  for (let i = 0; i < 128; i++) {
    for (const [x, y] of [[i, 15], [15, i], [i, 112], [112, i]] as const) assert.equal(alpha(x, y), 0, `margin at ${x},${y}`);
  }
  assert.equal(alpha(30, 64), 255, "artwork reaches into the 96 px square");
});
