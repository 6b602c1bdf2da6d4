// Chromium: the fields probe's offscreen document (offscreen-fields-probe.ts). It makes the requests the service
// worker asks for, to the probe's name only, as an image, a font face or a stylesheet link.
import { documentLoads } from "./browser-fields-probe.js";
import { isProbeLoad } from "./offscreen-fields-probe.js";

const loads = documentLoads(document);
chrome.runtime.onMessage.addListener((message: unknown) => {
  if (isProbeLoad(message)) loads[message.kind](message.url);
  return false;
});
