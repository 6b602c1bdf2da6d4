// The toolbar badge: whether lanefetch is on for the tab's site.
export type BadgeState = "on" | "off" | "session_off";

export async function showBadge(tabId: number, state: BadgeState): Promise<void> {
  const text = state === "on" ? "on" : state === "session_off" ? "off" : "";
  const title =
    state === "on"
      ? "lanefetch: on for this site"
      : state === "session_off"
        ? "lanefetch: off for this session (debugging bar cancelled)"
        : "lanefetch: off for this site";
  try {
    await chrome.action.setBadgeText({ tabId, text });
    await chrome.action.setBadgeBackgroundColor({ tabId, color: state === "on" ? "#188038" : "#80868b" });
    await chrome.action.setTitle({ tabId, title });
  } catch {
    // The tab closed meanwhile.
  }
}
