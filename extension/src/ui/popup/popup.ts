// The toolbar popup: the tab's site, the toggle, the helper's state, the tab's counters, "reload now".
// `popup.html?tabId=N` shows tab N instead of the active tab (used by the real-browser tests).
import type { PopupRequest, StatusReply } from "../../background/popup-api.js";
import { PASS_REASONS, type PassReason } from "../../intercept/pass-reason.js";
import { setHttpsSite } from "../../proxy/https-sites.js";
import { SiteStore } from "../../sites/site-store.js";
import { isPublicSuffix, ruleChoicesFor, sameRule, type SiteRule } from "../../sites/site-rule.js";
import { byId, formatBytes, formatMs, helperText } from "../format.js";

const store = new SiteStore(chrome.storage.local, chrome.storage.session);
const toggle = byId("toggle", HTMLInputElement);
const exact = byId("exact", HTMLInputElement);
const notice = byId("notice", HTMLParagraphElement);
const reload = byId("reload", HTMLButtonElement);
const https = byId("https", HTMLInputElement);

async function targetTabId(): Promise<number | undefined> {
  const fromQuery = Number(new URLSearchParams(location.search).get("tabId"));
  if (Number.isInteger(fromQuery) && fromQuery > 0) return fromQuery;
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

function say(text: string | null): void {
  notice.hidden = text === null;
  notice.textContent = text ?? "";
}

function render(status: StatusReply): void {
  const helper = helperText(status.helper);
  const helperEl = byId("helper", HTMLParagraphElement);
  helperEl.textContent = helper.text;
  helperEl.className = `helper ${helper.ok ? "ok" : "bad"}`;

  const choices = ruleChoicesFor(status.tab.url);
  const rule = status.tab.rule;
  toggle.disabled = choices === null;
  exact.disabled = choices === null;
  if (choices === null) {
    byId("site-name", HTMLSpanElement).textContent = "lanefetch works on http(s) pages only";
    toggle.checked = false;
  } else {
    const shown: SiteRule = rule ?? (exact.checked ? choices.host : choices.domain);
    const isAddress = /^[\d.]+$|^\[/.test(shown.name);
    byId("site-name", HTMLSpanElement).textContent =
      shown.scope === "domain" && !isAddress ? `${shown.name} (and its subdomains)` : shown.name;
    byId("host", HTMLSpanElement).textContent = choices.host.name;
    toggle.checked = rule !== null && !status.tab.sessionOff;
    if (rule) exact.checked = rule.scope === "host";
  }
  renderHttps(status);
  if (status.tab.sessionOff) say("You cancelled the debugging bar: lanefetch is off for this site for this browser session.");
  else say(status.tab.problem);

  const c = status.counts;
  const passedTotal = Object.values(c.passed).reduce((a, b) => a + b, 0);
  byId("accelerated", HTMLElement).textContent = String(c.accelerated);
  byId("passed", HTMLElement).textContent = String(passedTotal);
  byId("bytes", HTMLElement).textContent = formatBytes(c.bytes);
  const saved = byId("saved", HTMLElement);
  saved.textContent = formatMs(c.savedMs);
  saved.title = status.timeSavedModel;
  const reasons = byId("reasons", HTMLUListElement);
  reasons.replaceChildren(
    ...Object.entries(c.passed).map(([reason, n]) => {
      const li = document.createElement("li");
      li.textContent = `${n} × ${PASS_REASONS[reason as PassReason]}`;
      li.dataset.reason = reason;
      return li;
    }),
  );
}

const HTTPS_STATE_TEXT: Record<string, string> = {
  active: "HTTPS on this site goes through the helper.",
  restart_needed: "Installed: restart Firefox to start (Firefox reads new certificate authorities when it starts).",
  pending: "Installing the certificate authority…",
  failed: "Could not install the certificate authority",
};

/** Firefox only, and only for an enabled site's https:// page: one checkbox and one sentence, asked once. */
function renderHttps(status: StatusReply): void {
  const info = status.tab.https;
  const rule = status.tab.rule;
  byId("https-section", HTMLDivElement).hidden = info === undefined || rule === null || status.tab.sessionOff;
  if (info === undefined || rule === null) return;
  https.checked = info.optedIn;
  // A public suffix cannot be opted in (only out, if it was before): its authority would vouch for every site under it.
  const suffix = isPublicSuffix(rule.name);
  https.disabled = suffix && !info.optedIn;
  byId("https-explain", HTMLParagraphElement).textContent = suffix
    ? `${rule.name} is a public suffix (or a top-level name): a certificate authority for it would vouch for every ` +
      "site under it, so HTTPS acceleration is not offered for it."
    : `Firefox will trust a certificate authority made on this computer that can vouch only for ${rule.name}` +
    `${rule.scope === "domain" ? " and its subdomains" : ""}, so the lanefetch helper can read and speed up this site's ` +
    "HTTPS traffic; turning this off (or the site) removes it.";
  const state = info.state === null ? "" : HTTPS_STATE_TEXT[info.state] ?? info.state;
  // When the helper could not tell which profile runs lanefetch it used every profile: say so.
  const where = info.state !== null && info.which?.startsWith("every") ? ` Installed into ${info.which}.` : "";
  byId("https-state", HTMLParagraphElement).textContent = (info.state === "failed" ? `${state}: ${info.detail ?? ""}` : state) + where;
}

async function main(): Promise<void> {
  const tabId = await targetTabId();
  if (tabId === undefined) return;
  byId("timing", HTMLAnchorElement).href = `timing.html?tab=${tabId}`;
  const refresh = async (): Promise<StatusReply> => {
    const status = await chrome.runtime.sendMessage<PopupRequest, StatusReply>({ type: "lanefetch/status", tabId });
    render(status);
    document.body.dataset.ready = "true";
    return status;
  };
  let status = await refresh();

  const apply = async (): Promise<void> => {
    const choices = ruleChoicesFor(status.tab.url);
    if (!choices) return;
    const wanted = exact.checked ? choices.host : choices.domain;
    const current = status.tab.rule;
    if (current && (!toggle.checked || !sameRule(current, wanted))) {
      await store.disable(current);
      await setHttpsSite(chrome.storage.local, current, false); // the site off: its trust goes too
    }
    if (toggle.checked) await store.enable(wanted);
    reload.hidden = false;
    status = await refresh();
  };
  toggle.addEventListener("change", () => void apply());
  https.addEventListener("change", () => {
    const rule = status.tab.rule;
    if (rule) void setHttpsSite(chrome.storage.local, rule, https.checked).then(async () => { status = await refresh(); });
  });
  exact.addEventListener("change", () => {
    if (toggle.checked) void apply();
    else render(status);
  });
  reload.addEventListener("click", () => {
    void chrome.tabs.reload(tabId).then(() => window.close());
  });
  const timer = setInterval(() => void refresh().catch(() => clearInterval(timer)), 1000);
}

void main();
