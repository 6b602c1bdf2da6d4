// The options page: every enabled site, with a button to remove it.
import { SiteStore } from "../../sites/site-store.js";
import { ruleKey } from "../../sites/site-rule.js";
import { byId } from "../format.js";

const store = new SiteStore(chrome.storage.local, chrome.storage.session);

async function render(): Promise<void> {
  const [sites, off] = await Promise.all([store.enabledSites(), store.sessionOff()]);
  const offKeys = new Set(off.map(ruleKey));
  const table = byId("sites", HTMLTableElement);
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
    covers.textContent = site.scope === "domain" ? "the domain and its subdomains" : "this host only";
    const since = document.createElement("td");
    since.textContent = site.added ? new Date(site.added).toLocaleDateString() : "";
    const action = document.createElement("td");
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.addEventListener("click", () => void store.disable(site));
    action.append(remove);
    tr.append(name, covers, since, action);
    return tr;
  });
  table.tBodies[0]?.replaceChildren(...rows);
  document.body.dataset.ready = "true";
}

chrome.storage.onChanged.addListener(() => void render());
void render();
