// The options page: every enabled site, with a button to remove it; the helper cache's size, with a button to clear it;
// split downloads and the interfaces' policy (lanes-section.ts). While the helper cannot be asked (a new user meets
// this page before installing it), the cache and the interfaces are asked again every few seconds: once it is
// installed the page shows them, not a stale "not installed".
import type { CacheReply, CacheRequest } from "../../background/popup-api.js";
import { SiteStore } from "../../sites/site-store.js";
import { isAddressName, ruleKey } from "../../sites/site-rule.js";
import { byId, formatBytes, helperText, setTextWithCode } from "../format.js";
import { startLanesSection } from "./lanes-section.js";

const store = new SiteStore(chrome.storage.local, chrome.storage.session);

async function render(): Promise<void> {
  const [sites, off] = await Promise.all([store.enabledSites(), store.sessionOff()]);
  const offKeys = new Set(off.map(ruleKey));
  const table = byId("sites", HTMLTableElement);
  // The list is drawn anew at every storage change: a Remove button that had the keyboard focus gets it back (its
  // site's, or the one now in its place when its site went), so the person is not sent back to the page's top.
  const focused = document.activeElement;
  const focusedRow = focused instanceof HTMLButtonElement && table.contains(focused) ? focused.closest("tr") : null;
  const focusedAt = focusedRow ? [...(table.tBodies[0]?.rows ?? [])].indexOf(focusedRow) : -1;
  byId("empty", HTMLParagraphElement).hidden = sites.length > 0;
  table.hidden = sites.length === 0;
  const rows = sites.map((site) => {
    const tr = document.createElement("tr");
    tr.dataset.site = ruleKey(site);
    const name = document.createElement("td");
    name.textContent = site.name;
    if (offKeys.has(ruleKey(site))) {
      const note = document.createElement("span");
      note.className = "off";
      note.textContent = " (off for this session)";
      name.append(note);
    }
    const covers = document.createElement("td");
    covers.textContent = isAddressName(site.name) ? "this address only"
      : site.scope === "domain" ? "the domain and its subdomains" : "this host only";
    const since = document.createElement("td");
    since.textContent = site.added ? new Date(site.added).toLocaleDateString() : "";
    const action = document.createElement("td");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove ${site.name}`);
    remove.addEventListener("click", () => void store.disable(site));
    action.append(remove);
    tr.append(name, covers, since, action);
    return tr;
  });
  table.tBodies[0]?.replaceChildren(...rows);
  if (focusedRow) {
    const row = rows.find((tr) => tr.dataset.site === focusedRow.dataset.site) ?? rows[Math.min(focusedAt, rows.length - 1)];
    row?.querySelector("button")?.focus();
  }
  document.body.dataset.ready = "true";
}

function cacheText(reply: CacheReply): string {
  const { stats } = reply;
  if (!stats) return `Cache unavailable. ${helperText(reply.helper).text}`;
  if (stats.error !== undefined) return `Cache unavailable: ${stats.error}`;
  const persistent = stats.location === null
    ? "This helper runs without a persistent cache."
    : `${stats.entries ?? 0} entries, ${formatBytes(stats.bytes ?? 0)}.`;
  const privately = stats.private_entries ? ` Private windows: ${stats.private_entries} entries, ${formatBytes(stats.private_bytes ?? 0)} in memory.` : "";
  const cleared = stats.cleared !== undefined ? `Removed ${stats.cleared} entries. ` : "";
  return `${cleared}${persistent}${privately}`;
}

/** While the helper cannot be asked (not installed yet: a new user meets this page first), it is asked again this
 * often, so the page shows the helper's answers once it is there without being reloaded. */
const ASK_AGAIN_MS = 3000;

async function cache(action: CacheRequest["action"]): Promise<void> {
  const button = byId("cache-clear", HTMLButtonElement);
  const state = byId("cache-state", HTMLParagraphElement);
  button.disabled = true;
  const reply = await chrome.runtime.sendMessage<CacheRequest, CacheReply>({ type: "lanefetch/cache", action });
  setTextWithCode(state, cacheText(reply));
  // Where it is kept only for who asks (a path means nothing to most people). Shown from the start, so the page does
  // not move under the pointer when the answer comes; hidden only when there is no such place.
  const location = reply.stats?.location ?? null;
  byId("cache-where", HTMLDetailsElement).hidden = reply.stats !== null && location === null;
  byId("cache-file", HTMLElement).textContent = location ?? "unknown: the helper did not answer";
  state.dataset.entries = String(reply.stats?.entries ?? "");
  button.disabled = reply.stats === null || reply.stats.error !== undefined;
  if (reply.stats === null) setTimeout(() => void cache("stats"), ASK_AGAIN_MS);
}

byId("cache-clear", HTMLButtonElement).addEventListener("click", () => void cache("clear"));
chrome.storage.onChanged.addListener(() => void render());
void render();
if (__LANEFETCH_BROWSER__ === "firefox") {
  // Firefox keeps what its proxy (the helper) returns in its own cache, as for any page; the helper's proxy keeps no
  // cache, so there is nothing of the helper's to count or clear (asking would show an empty cache of another kind).
  byId("cache-about", HTMLParagraphElement).textContent =
    "In Firefox, pages loaded through the helper are kept in Firefox's own cache, like any page; the helper keeps no copy of them.";
  for (const id of ["cache-state", "cache-where", "cache-clear"]) byId(id, HTMLElement).hidden = true;
} else {
  void cache("stats");
}
startLanesSection(ASK_AGAIN_MS);
