// The helper's reasons an interface carries no lane, as the options page says them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { unusableInPlainWords } from "../../../extension/src/ui/options/interface-words.js";

test("usable: nothing to say; loopback: never usable, nothing to change; the rest in plain words", () => {
  assert.equal(unusableInPlainWords(null), null);
  assert.deepEqual(unusableInPlainWords("loopback"), {
    text: "Not used: this computer's internal connection, which never reaches the internet.", permanent: true,
  });
  assert.equal(unusableInPlainWords("down")?.text, "Not used now: not connected.");
  assert.equal(unusableInPlainWords("metered")?.permanent, false, "metered is the person's own setting");
  assert.equal(unusableInPlainWords("daily cap of 5000000 bytes reached")?.text, "Not used for the rest of today: its daily cap is reached.");
  assert.equal(unusableInPlainWords("something new")?.text, "Not used now: something new.");
  for (const why of ["loopback", "down", "no address", "disabled", "metered", "not present"]) {
    assert.doesNotMatch(unusableInPlainWords(why)?.text ?? "", /loopback|bytes/, why);
  }
});
