// The toolbar popup: one line saying what lanefetch does on this tab (state-line.ts), the site's switch, why requests
// were left to the browser, the helper's state, "reload now".
// `popup.html?tabId=N` shows tab N instead of the active tab (used by the real-browser tests).
import type { PopupRequest, StatusReply } from "../../background/popup-api.js";
import { setHttpsSite } from "../../proxy/https-sites.js";
import { SiteStore } from "../../sites/site-store.js";
import { isAddressName, isPublicSuffix, ruleChoicesFor, sameRule, type SiteRule } from "../../sites/site-rule.js";
import { LEFT_TO_BROWSER } from "../../timings/left-to-browser.js";
import { byId, helperText, setTextWithCode } from "../format.js";
import { reasonLines, stateLine } from "./state-line.js";

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

/** Writes only a change: the popup re-renders every second, and a rewritten live region is read out again. */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

function say(text: string | null): void {
  notice.hidden = text === null;
  setText(notice, text ?? "");
}

function render(status: StatusReply): void {
  const choices = ruleChoicesFor(status.tab.url);
  const rule = status.tab.rule;
  const state = stateLine({
    helper: status.helper, webPage: choices !== null, siteOn: rule !== null, sessionOff: status.tab.sessionOff,
    problem: status.tab.problem, counts: status.counts,
  });
  byId("state", HTMLElement).className = `state ${state.tone}`;
  setTextWithCode(byId("state-line", HTMLParagraphElement), state.headline);
  const detail = byId("state-detail", HTMLParagraphElement);
  detail.hidden = state.detail === null;
  setText(detail, state.detail ?? "");
  // With accelerated requests the only second line is the time saved: its model on hover.
  detail.title = status.counts.accelerated > 0 && state.detail !== null ? status.timeSavedModel : "";

  // The helper's own line only when it says something the state line does not.
  const helper = helperText(status.helper);
  const helperEl = byId("helper", HTMLParagraphElement);
  setTextWithCode(helperEl, helper.text);
  helperEl.hidden = status.helper.status === "not_installed" && rule !== null;

  toggle.disabled = choices === null;
  exact.disabled = choices === null;
  byId("host", HTMLSpanElement).textContent = choices?.host.name ?? "";
  (exact.parentElement as HTMLElement).hidden = choices === null || choices.host.name === choices.domain.name;
  if (choices === null) {
    byId("site-name", HTMLParagraphElement).textContent = "This tab shows no web page.";
    toggle.checked = false;
  } else {
    const shown: SiteRule = rule ?? (exact.checked ? choices.host : choices.domain);
    byId("site-name", HTMLParagraphElement).textContent =
      shown.scope === "domain" && !isAddressName(shown.name) ? `${shown.name} and its subdomains` : shown.name;
    toggle.checked = rule !== null && !status.tab.sessionOff;
    if (rule) exact.checked = rule.scope === "host";
  }
  renderHttps(status);
  // The session switch-off is the state line's own subject; anything else wrong is said here in full.
  say(status.tab.sessionOff ? null : status.tab.problem);

  const lines = reasonLines(status.counts.passed);
  const left = Object.values(status.counts.passed).reduce((a, b) => a + b, 0);
  const section = byId("left-section", HTMLDetailsElement);
  // Worth a breakdown only next to accelerated requests, or when more than one reason applies.
  section.hidden = rule === null || lines.length === 0 || (status.counts.accelerated === 0 && lines.length === 1);
  byId("left-summary", HTMLElement).textContent = `${left} ${left === 1 ? "request" : "requests"} ${LEFT_TO_BROWSER}`;
  byId("reasons", HTMLUListElement).replaceChildren(...lines.map(({ reason, text }) => {
    const li = document.createElement("li");
    li.textContent = text;
    li.dataset.reason = reason;
    return li;
  }));
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
      "site under it, so lanefetch does not offer HTTPS for it."
    : `Firefox will trust a certificate authority made on this computer that can vouch only for ${rule.name}` +
    `${rule.scope === "domain" && !isAddressName(rule.name) ? " and its subdomains" : ""}, so the lanefetch helper can read and speed up this site's ` +
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
  // What the popup shows is what its controls act on: every refresh (the one each second too) replaces it, so a tab
  // gone on to another site while the popup is open has the site now named switched, not the one shown at first.
  const ask = (): Promise<StatusReply> => chrome.runtime.sendMessage<PopupRequest, StatusReply>({ type: "lanefetch/status", tabId });
  let status = await ask();
  const refresh = async (): Promise<void> => {
    status = await ask();
    render(status);
  };
  render(status);
  document.body.dataset.ready = "true";

  const apply = async (): Promise<void> => {
    const choices = ruleChoicesFor(status.tab.url);
    if (!choices) return;
    // What the person asked for, read once: a redraw while the old rule goes (each second, from the background)
    // would show the site off and the new rule would never be written.
    const on = toggle.checked;
    const wanted = exact.checked ? choices.host : choices.domain;
    const current = status.tab.rule;
    // The site off: its HTTPS trust goes too (the store withdraws it).
    if (current && (!on || !sameRule(current, wanted))) await store.disable(current);
    if (on) await store.enable(wanted);
    reload.hidden = false;
    await refresh();
  };
  toggle.addEventListener("change", () => void apply());
  https.addEventListener("change", () => {
    const rule = status.tab.rule;
    if (rule) void setHttpsSite(chrome.storage.local, rule, https.checked).then(refresh);
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
