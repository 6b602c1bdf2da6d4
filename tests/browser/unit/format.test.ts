// The extension pages' number formatting (format.ts): a value never shows in a unit it has outgrown by rounding.
import { test } from "node:test";
import assert from "node:assert/strict";
import { formatBytes, formatMs } from "../../../extension/src/ui/format.js";

test("formatMs: a time that rounds to a whole second is shown in seconds, not as 1000 ms", () => {
  assert.equal(formatMs(999.4), "999 ms");
  assert.equal(formatMs(999.5), "1.0 s");
  assert.equal(formatMs(999.9), "1.0 s");
  assert.equal(formatMs(1000), "1.0 s");
  assert.equal(formatMs(1549), "1.5 s");
});

test("formatBytes: a size that rounds to 1024.0 KiB (or 1024 B) is shown in the next unit", () => {
  assert.equal(formatBytes(1023), "1023 B");
  assert.equal(formatBytes(1024), "1.0 KiB");
  assert.equal(formatBytes(1024 * 1024 - 1), "1.0 MiB");
  assert.equal(formatBytes(1024 * 1024 - 51), "1.0 MiB");
  assert.equal(formatBytes(1024 * 1024 - 52), "1023.9 KiB");
  assert.equal(formatBytes(5 * 1024 * 1024), "5.0 MiB");
});
