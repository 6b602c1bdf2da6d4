// One interface's policy as the options page edits it (weight, daily cap in MB), checked before it goes to the
// helper: bad input gets a clear error there and nothing is sent.
import type { InterfacesCommand } from "../generated/protocol.js";

export type PolicyChange = NonNullable<InterfacesCommand["policy"]>;

export interface PolicyForm {
  enabled: boolean;
  metered: boolean;
  /** As typed. */
  weight: string;
  /** As typed, in MB (10^6 bytes); empty or 0: no cap. */
  capMb: string;
}

/** The largest weight the form takes (the helper compares lanes' weights only up to a ratio of 1e6 anyway). */
export const MAX_WEIGHT = 1e6;

export function policyFromForm(form: PolicyForm): { policy: PolicyChange } | { error: string } {
  const weight = Number(form.weight.trim());
  if (form.weight.trim() === "" || !Number.isFinite(weight) || weight <= 0 || weight > MAX_WEIGHT) {
    return { error: `Weight must be a number above 0 and at most ${MAX_WEIGHT}, not "${form.weight}".` };
  }
  const capText = form.capMb.trim();
  const capMb = capText === "" ? 0 : Number(capText);
  if (!Number.isFinite(capMb) || capMb < 0) {
    return { error: `Daily cap must be empty (no cap) or 0 or more MB, not "${form.capMb}".` };
  }
  const cap = Math.round(capMb * 1e6);
  return { policy: { enabled: form.enabled, metered: form.metered, weight, daily_cap_bytes: cap === 0 ? null : cap } };
}

/** The cap as the form shows it (MB, empty for none). */
export function capToForm(bytes: number | null): string {
  return bytes === null || bytes === 0 ? "" : String(bytes / 1e6);
}
