// Never around the user's network policy: when the browser is set to use a proxy (fixed servers or a PAC script),
// the helper would fetch around it, so lanefetch stays off and the popup says why. ("system" and "direct" leave the
// choice to the environment the helper shares with the browser.)

export const PROXY_NOTICE =
  "The browser is set to use a proxy: lanefetch stays off, because its helper would fetch around the proxy.";

/** Firefox fires proxy.settings.onChange only for extensions' changes, not for a proxy the user sets in its settings
 * (a preference, as in about:config): the setting is read again this often. */
export const FIREFOX_PROXY_RECHECK_MS = 3000;

export function proxyBlocks(mode: string | undefined): boolean {
  // Chromium's `mode`, Firefox's `proxyType`.
  return mode === "fixed_servers" || mode === "pac_script" || mode === "manual" || mode === "autoConfig";
}

function modeOf(value: unknown): string | undefined {
  const v = value as { mode?: string; proxyType?: string } | undefined;
  return v?.mode ?? v?.proxyType;
}

/** Watches chrome.proxy settings; calls `changed` with whether they block lanefetch, now and on every change (and,
 * with `recheckMs`, on every read of them that often: changes the browser does not announce). */
export function watchProxy(changed: (blocked: boolean) => void, recheckMs?: number): Promise<void> {
  const read = async (): Promise<void> => {
    const setting = await chrome.proxy.settings.get({ incognito: false });
    changed(proxyBlocks(modeOf(setting.value)));
  };
  chrome.proxy.settings.onChange.addListener((details) => {
    changed(proxyBlocks(modeOf(details.value)));
  });
  if (recheckMs !== undefined) {
    setInterval(() => void read().catch((e: unknown) => console.warn("lanefetch: cannot read the proxy settings", e)), recheckMs);
  }
  return read();
}
