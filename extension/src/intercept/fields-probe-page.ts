// Chromium: the fields probe's offscreen document (offscreen-fields-probe.ts). Reloaded by the run's session, with the
// run's nonce (`?run=`), as the offscreen document (no `tabs` API there), it asks for that run's image, stylesheet and
// script preload, to the probe's name; anywhere else (its first load, no nonce, opened in a tab) it does nothing.
import { CHROMIUM_PROBE_KINDS, documentLoads, startLoads } from "./browser-fields-probe.js";
import { pageRun } from "./offscreen-fields-probe.js";

const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
const run = pageRun(location.search, navigation?.type, typeof (chrome as { tabs?: unknown }).tabs !== "undefined");
if (run !== null) startLoads(documentLoads(document), run, CHROMIUM_PROBE_KINDS);
