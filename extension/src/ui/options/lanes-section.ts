// The options page's "Split downloads" section: the switch for splitting large downloads, and the
// helper's network interfaces with their policy, each row editable and saved through the helper (the same policy
// file as `lanefetch interfaces`). Bad input is refused here with the reason; the row keeps what was typed.
import type { InterfacesReply, InterfacesRequest } from "../../lanes/interfaces-api.js";
import { capToForm, policyFromForm } from "../../lanes/policy-form.js";
import { SPLIT_LARGE_KEY } from "../../lanes/split-rule.js";
import type { InterfaceState } from "../../generated/protocol.js";
import { byId, formatBytes, helperText } from "../format.js";

const inFirefox = chrome.runtime.getURL("").startsWith("moz-extension:");

function input(type: string, className: string, value: string | boolean): HTMLInputElement {
  const el = document.createElement("input");
  el.type = type;
  el.className = className;
  if (typeof value === "boolean") el.checked = value;
  else el.value = value;
  return el;
}

function cell(...content: (Node | string)[]): HTMLTableCellElement {
  const td = document.createElement("td");
  td.append(...content);
  return td;
}

function row(i: InterfaceState): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.dataset.name = i.name;
  const name = document.createElement("span");
  name.textContent = i.name;
  name.title = i.addresses.join(" ") || "no address";
  const enabled = input("checkbox", "enabled", i.enabled);
  const weight = input("number", "weight", String(i.weight));
  weight.min = "0";
  weight.step = "any";
  const metered = input("checkbox", "metered", i.metered);
  const cap = input("number", "cap", capToForm(i.daily_cap_bytes));
  cap.min = "0";
  cap.step = "any";
  cap.placeholder = "no cap";
  const save = document.createElement("button");
  save.type = "button";
  save.className = "save";
  save.textContent = "Save";
  const message = document.createElement("span");
  message.className = "message";
  message.setAttribute("aria-live", "polite");
  save.addEventListener("click", () => {
    const checked = policyFromForm({ enabled: enabled.checked, metered: metered.checked, weight: weight.value, capMb: cap.value });
    if ("error" in checked) {
      message.textContent = checked.error;
      tr.dataset.error = "true";
      return;
    }
    save.disabled = true;
    message.textContent = "Saving…";
    void ask({ type: "lanefetch/interfaces", name: i.name, policy: checked.policy }).then((refused) => {
      if (refused === null) return;
      message.textContent = refused; // the helper refused: nothing changed, the row keeps what was typed
      tr.dataset.error = "true";
      save.disabled = false;
    });
  });
  tr.append(
    cell(name), cell(i.why_not === null ? "yes" : `no (${i.why_not})`), cell(enabled), cell(weight), cell(metered), cell(cap),
    cell(formatBytes(i.bytes_today)), cell(save, " ", message),
  );
  return tr;
}

/** Shows the helper's answer; a refusal (or no answer) leaves the table as it is and is returned as text. */
function show(reply: InterfacesReply): string | null {
  const state = byId("interfaces-state", HTMLParagraphElement);
  const table = byId("interfaces", HTMLTableElement);
  const { state: answer } = reply;
  if (answer === null) {
    state.textContent = `Interfaces unavailable. ${helperText(reply.helper).text}`;
    return state.textContent;
  }
  if (answer.error !== undefined || answer.interfaces === undefined) {
    state.textContent = answer.error ?? "";
    return `Not saved: ${answer.error ?? "no answer"}`;
  }
  state.textContent = "";
  table.tBodies[0]?.replaceChildren(...answer.interfaces.map(row));
  table.hidden = false;
  byId("interfaces-file", HTMLParagraphElement).textContent = `Policy file: ${answer.policy_file ?? ""} (also \`lanefetch interfaces\`).`;
  state.dataset.loaded = String(Date.now());
  return null;
}

async function ask(request: InterfacesRequest): Promise<string | null> {
  return show(await chrome.runtime.sendMessage<InterfacesRequest, InterfacesReply>(request));
}

export function startLanesSection(): void {
  const box = byId("split-large", HTMLInputElement);
  // Firefox streams proxied bodies to the page: no size limit there.
  if (inFirefox) byId("split-limit", HTMLSpanElement).textContent = "They arrive as they come, whatever their size.";
  void chrome.storage.local.get(SPLIT_LARGE_KEY).then((s) => {
    box.checked = s[SPLIT_LARGE_KEY] === true;
    box.dataset.ready = "true";
  });
  box.addEventListener("change", () => void chrome.storage.local.set({ [SPLIT_LARGE_KEY]: box.checked }));
  void ask({ type: "lanefetch/interfaces" });
}
