// The options page's "Split downloads" section: the switch for splitting large downloads, and the helper's network
// interfaces with their policy (the same policy file as `lanefetch interfaces`). Each row saves itself when a field
// is changed (no Save button to forget) and says so: "Saving…", "Saved", or why not. Bad input is refused here
// with the reason and the row keeps what was typed. Interfaces that cannot carry a lane are greyed with the reason
// in plain words; the loopback interface, which never can, has no inputs to change.
import type { InterfacesReply, InterfacesRequest } from "../../lanes/interfaces-api.js";
import { capToForm, policyFromForm } from "../../lanes/policy-form.js";
import { SPLIT_LARGE_KEY } from "../../lanes/split-rule.js";
import type { InterfaceState } from "../../generated/protocol.js";
import { byId, formatBytes, helperText, setTextWithCode } from "../format.js";
import { unusableInPlainWords } from "./interface-words.js";

const inFirefox = chrome.runtime.getURL("").startsWith("moz-extension:");

/** The table's rows by interface name: kept across the helper's answers, so a field being typed in is never
 * replaced under the person typing. */
const rows = new Map<string, { tr: HTMLTableRowElement; update(i: InterfaceState): void }>();

function input(type: string, className: string, label: string): HTMLInputElement {
  const el = document.createElement("input");
  el.type = type;
  el.className = className;
  el.setAttribute("aria-label", label);
  return el;
}

function cell(...content: (Node | string)[]): HTMLTableCellElement {
  const td = document.createElement("td");
  td.append(...content);
  return td;
}

function policyFromFormOrNull(enabled: HTMLInputElement, metered: HTMLInputElement, weight: HTMLInputElement, cap: HTMLInputElement): unknown {
  const checked = policyFromForm({ enabled: enabled.checked, metered: metered.checked, weight: weight.value, capMb: cap.value });
  return "error" in checked ? null : checked.policy;
}

function newRow(name: string): { tr: HTMLTableRowElement; update(i: InterfaceState): void } {
  const tr = document.createElement("tr");
  tr.dataset.name = name;
  const head = document.createElement("th");
  head.scope = "row";
  head.textContent = name;
  const state = document.createElement("span");
  state.className = "state";
  const enabled = input("checkbox", "enabled", `Use ${name}`);
  const weight = input("number", "weight", `Weight of ${name}`);
  weight.min = "0";
  weight.step = "any";
  const metered = input("checkbox", "metered", `${name} is metered`);
  const cap = input("number", "cap", `Daily cap of ${name} in MB`);
  cap.min = "0";
  cap.step = "any";
  cap.placeholder = "no cap";
  const today = cell();
  const message = document.createElement("span");
  message.className = "message";
  message.setAttribute("role", "status");
  const fields = [enabled, weight, metered, cap];
  const say = (text: string, kind: "saved" | "error" | null): void => {
    setTextWithCode(message, text);
    if (kind === "saved") tr.dataset.saved = "true";
    else delete tr.dataset.saved;
    if (kind === "error") tr.dataset.error = "true";
    else delete tr.dataset.error;
  };
  let saves = 0;
  /** The policy last sent (or drawn from the helper): a change event that changes nothing sends nothing. */
  let known = "";
  const save = (): void => {
    for (const f of fields) delete f.dataset.dirty;
    const checked = policyFromForm({ enabled: enabled.checked, metered: metered.checked, weight: weight.value, capMb: cap.value });
    if ("error" in checked) return say(checked.error, "error");
    if (JSON.stringify(checked.policy) === known) {
      if (tr.dataset.saved === undefined) say("", null); // back to what the helper has: nothing to say
      return;
    }
    known = JSON.stringify(checked.policy);
    const attempt = ++saves;
    say("Saving…", null);
    void chrome.runtime.sendMessage<InterfacesRequest, InterfacesReply>({ type: "lanefetch/interfaces", name, policy: checked.policy })
      .then((reply) => {
        const refused = show(reply);
        if (attempt !== saves) return; // a later change is on its way: it says how that went
        // Refused: nothing changed, the row keeps what was typed.
        if (refused !== null) {
          known = ""; // not what the helper has: the same change may be tried again
          say(refused, "error");
        }
        else if (!fields.some((f) => f.dataset.dirty)) say("Saved", "saved");
      });
  };
  // Checkboxes save at once; number fields when the value is committed (Enter, leaving the field, the arrows).
  for (const field of fields) field.addEventListener("change", save);
  for (const field of [weight, cap]) {
    field.addEventListener("input", () => {
      field.dataset.dirty = "true";
      say("Not saved yet (Enter to save)", null);
    });
  }
  tr.append(head, cell(state), cell(enabled), cell(weight), cell(metered), cell(cap), today, cell(message));
  return {
    tr,
    update(i: InterfaceState): void {
      head.title = i.addresses.join(" ") || "no address";
      const unusable = unusableInPlainWords(i.why_not);
      tr.classList.toggle("unusable", unusable !== null);
      if (unusable?.permanent) tr.dataset.permanent = "true";
      else delete tr.dataset.permanent;
      state.textContent = unusable?.text ?? "Used for split downloads.";
      today.textContent = formatBytes(i.bytes_today);
      for (const f of fields) f.disabled = unusable?.permanent === true;
      // What the helper has, except in a field the person is typing in.
      const untouched = (f: HTMLInputElement): boolean => f.dataset.dirty === undefined && f !== document.activeElement;
      if (untouched(enabled)) enabled.checked = i.enabled;
      if (untouched(metered)) metered.checked = i.metered;
      if (untouched(weight)) weight.value = String(i.weight);
      if (untouched(cap)) cap.value = capToForm(i.daily_cap_bytes);
      if (saves === 0) known = JSON.stringify(policyFromFormOrNull(enabled, metered, weight, cap));
    },
  };
}

/** Shows the helper's answer; a refusal (or no answer) leaves the table as it is and is returned as text. */
function show(reply: InterfacesReply): string | null {
  const state = byId("interfaces-state", HTMLParagraphElement);
  const table = byId("interfaces", HTMLTableElement);
  const { state: answer } = reply;
  if (answer === null) {
    const text = `Interfaces unavailable. ${helperText(reply.helper).text}`;
    setTextWithCode(state, text);
    return text;
  }
  if (answer.error !== undefined || answer.interfaces === undefined) {
    setTextWithCode(state, answer.error ?? "");
    return `Not saved: ${answer.error ?? "no answer"}`;
  }
  setTextWithCode(state, "");
  const order: HTMLTableRowElement[] = [];
  for (const i of answer.interfaces) {
    let row = rows.get(i.name);
    if (!row) {
      row = newRow(i.name);
      rows.set(i.name, row);
    }
    row.update(i);
    order.push(row.tr);
  }
  for (const [name, row] of rows) if (!order.includes(row.tr)) rows.delete(name);
  // Rows already in place stay put (moving a node would take the keyboard focus from it).
  const body = table.tBodies[0];
  if (body && (body.children.length !== order.length || order.some((tr, n) => body.children[n] !== tr))) body.replaceChildren(...order);
  table.hidden = false;
  // Where it is kept only for who asks (a path means nothing to most people).
  byId("interfaces-where", HTMLDetailsElement).hidden = !answer.policy_file;
  byId("interfaces-file", HTMLElement).textContent = answer.policy_file ?? "";
  state.dataset.loaded = String(Date.now());
  return null;
}

async function ask(request: InterfacesRequest): Promise<string | null> {
  return show(await chrome.runtime.sendMessage<InterfacesRequest, InterfacesReply>(request));
}

/** `askAgainMs`: while the helper's interfaces cannot be listed (no helper yet), how often to ask again. */
export function startLanesSection(askAgainMs: number): void {
  const box = byId("split-large", HTMLInputElement);
  // Firefox streams proxied bodies to the page: no size limit there.
  if (inFirefox) byId("split-limit", HTMLSpanElement).textContent = "They arrive as they come, whatever their size.";
  void chrome.storage.local.get(SPLIT_LARGE_KEY).then((s) => {
    box.checked = s[SPLIT_LARGE_KEY] === true;
    box.dataset.ready = "true";
  });
  box.addEventListener("change", () => void chrome.storage.local.set({ [SPLIT_LARGE_KEY]: box.checked }));
  const list = (): void => void ask({ type: "lanefetch/interfaces" }).then((failed) => {
    if (failed !== null) setTimeout(list, askAgainMs);
  });
  list();
}
