// The part of chrome.storage.StorageArea (and browser.storage.*) the extension's stores use: the site list
// (site-store.ts) and the HTTPS opt-ins (proxy/https-sites.ts) both keep theirs in one.
export interface StorageAreaLike {
  get(key: string): Promise<Record<string, unknown>>;
  set(items: Record<string, unknown>): Promise<void>;
}
