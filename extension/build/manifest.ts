// The extension manifest, generated per browser from one description.
import type { Identity } from "./identity.js";

export type TargetBrowser = "chromium" | "firefox";

export function manifestFor(browser: TargetBrowser, identity: Identity, version: string): Record<string, unknown> {
  const common = {
    manifest_version: 3,
    name: "lanefetch",
    version,
    description: "Loads pages of the sites you choose through the lanefetch helper: pipelined HTTP/1.1, fast on slow links.",
    icons: { "16": "icons/16.png", "32": "icons/32.png", "48": "icons/48.png", "128": "icons/128.png" },
    action: { default_popup: "popup.html", default_title: "lanefetch", default_icon: { "16": "icons/16.png", "32": "icons/32.png" } },
    options_ui: { page: "options.html", open_in_tab: true },
    devtools_page: "devtools.html",
    host_permissions: ["<all_urls>"],
  };
  if (browser === "chromium") {
    return {
      ...common,
      key: identity.chromium_manifest_key,
      // chrome.debugger child sessions (sessionId in Debuggee) need 125.
      minimum_chrome_version: "125",
      // offscreen: the fields probe's document (intercept/offscreen-fields-probe.ts).
      permissions: ["debugger", "declarativeNetRequest", "webNavigation", "webRequest", "scripting", "storage", "nativeMessaging", "proxy", "offscreen"],
      background: { service_worker: "background.js" },
    };
  }
  return {
    ...common,
    // proxy: route enabled sites' requests to the helper; webRequest + webRequestAuthProvider: answer the helper's 407
    // with the session secret (Firefox sends an extension's proxy header only on CONNECT, not on plain http).
    permissions: ["proxy", "webRequest", "webRequestBlocking", "webRequestAuthProvider", "webNavigation", "tabs", "storage", "nativeMessaging"],
    background: { scripts: ["background.js"] },
    browser_specific_settings: {
      // Nothing leaves the machine: the helper runs locally and lanefetch collects no data.
      gecko: { id: identity.firefox_extension_id, strict_min_version: "142.0", data_collection_permissions: { required: ["none"] } },
    },
  };
}
