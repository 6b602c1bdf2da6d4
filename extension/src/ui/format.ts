// Small text formatting shared by the extension pages.
import type { HelperState } from "../bridge/helper-state.js";
import { INSTALL_COMMAND } from "../bridge/helper-state.js";

// The unit is chosen by the value as shown (rounded): 1048575 B is "1.0 MiB", not "1024.0 KiB"; 999.7 ms "1.0 s".
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const kib = (bytes / 1024).toFixed(1);
  if (Number(kib) < 1024) return `${kib} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function formatMs(ms: number): string {
  const whole = Math.round(ms);
  return whole < 1000 ? `${whole} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export function helperText(state: HelperState): { text: string; ok: boolean } {
  switch (state.status) {
    case "connected":
      return { text: `Helper connected (version ${state.version})`, ok: true };
    case "not_installed":
      return { text: `Helper not installed: run \`${INSTALL_COMMAND}\``, ok: false };
    case "incompatible":
      return { text: `Helper incompatible: ${state.message}`, ok: false };
    case "disconnected":
      return { text: `Helper not running (${state.message}); it restarts on the next page load`, ok: false };
    case "connecting":
    case "idle":
      return { text: "Helper: not connected yet", ok: false };
  }
}

/** An element by id, typed; throws if the page lacks it (a bug in the page, not a runtime condition). */
export function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`#${id} missing`);
  return el;
}

/** Writes text with its `backticked` parts (a command to type: helperText's) shown as code; only a change (the popup
 * re-renders every second, and a rewritten live region is read out again). */
export function setTextWithCode(el: HTMLElement, text: string): void {
  if (el.dataset.text === text) return;
  el.dataset.text = text;
  el.replaceChildren(...text.split("`").map((part, i) => {
    if (i % 2 === 0) return part;
    const code = document.createElement("code");
    code.textContent = part;
    return code;
  }));
}
