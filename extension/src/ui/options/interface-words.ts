// The helper's reasons an interface cannot carry a download lane now, in plain words, and whether the person can
// change that from the options page (a loopback interface never reaches the internet: nothing to set). Pure.

export interface Unusable {
  /** A sentence for the row. */
  text: string;
  /** No setting of the row can make it usable (its inputs are disabled). */
  permanent: boolean;
}

export function unusableInPlainWords(whyNot: string | null): Unusable | null {
  if (whyNot === null) return null;
  if (whyNot === "loopback") return { text: "Not used: this computer's internal connection, which never reaches the internet.", permanent: true };
  if (whyNot === "down") return { text: "Not used now: not connected.", permanent: false };
  if (whyNot === "no address") return { text: "Not used now: no network address yet.", permanent: false };
  if (whyNot === "disabled") return { text: "Not used: turned off here.", permanent: false };
  if (whyNot === "metered") return { text: "Not used: metered connections are never used for the browser.", permanent: false };
  if (whyNot === "not present") return { text: "Not used: not on this computer now.", permanent: false };
  if (whyNot.startsWith("daily cap")) return { text: "Not used for the rest of today: its daily cap is reached.", permanent: false };
  return { text: `Not used now: ${whyNot}.`, permanent: false };
}
