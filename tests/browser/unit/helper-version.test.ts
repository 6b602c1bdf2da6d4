// Hello between the extension's HelperConnection and the real lanefetch-host: a matching pair connects and reports
// the helper's version; an extension speaking another protocol is refused, and the popup's text says which side to
// update and how.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { HelperConnection, PROTOCOL_VERSION } from "../../../extension/src/bridge/helper-connection.js";
import type { NativePort } from "../../../extension/src/bridge/native-port.js";
import { helperText } from "../../../extension/src/ui/format.js";
import { ProcessNativePort } from "../support/process-native-port.js";
import { helperHost, repoRoot } from "../support/paths.js";

const version = (JSON.parse(readFileSync(resolve(repoRoot, "package.json"), "utf8")) as { version: string }).version;

/** The real host, with the extension's hello claiming `protocol` (an extension from another release). */
function connect(protocol: number | null): HelperConnection {
  return new HelperConnection((): NativePort => {
    const port = new ProcessNativePort(helperHost);
    return {
      postMessage: (m: unknown) => {
        const hello = m as { type?: string };
        port.postMessage(protocol !== null && hello.type === "hello" ? { ...hello, protocol } : m);
      },
      onMessage: (l) => port.onMessage(l),
      onDisconnect: (l) => port.onDisconnect(l),
      disconnect: () => port.disconnect(),
    };
  }, { extensionVersion: version, browser: "chromium", helloTimeoutMs: 30_000, retryMissingMs: 5000, retryCrashMs: 0 });
}

test("a matching extension and helper connect; the popup shows the helper's version", async () => {
  const connection = connect(null);
  assert.equal(await connection.ready(), true);
  assert.deepEqual(helperText(connection.state), { text: `Helper connected (version ${version})`, ok: true });
  connection.close();
});

test("an extension newer than the helper is refused, and told to update the helper", async () => {
  const connection = connect(PROTOCOL_VERSION + 1);
  assert.equal(await connection.ready(), false);
  assert.equal(connection.state.status, "incompatible");
  const shown = helperText(connection.state);
  assert.equal(shown.ok, false);
  assert.equal(
    shown.text,
    `Helper incompatible: This extension speaks protocol ${PROTOCOL_VERSION + 1}; the installed helper ` +
      `(lanefetch ${version}) speaks protocol ${PROTOCOL_VERSION}. Update the helper: pipx upgrade lanefetch, then lanefetch install.`,
  );
  // refused pairs are not retried at once (no hammering the helper every page load)
  assert.equal(await connection.ready(), false);
});
