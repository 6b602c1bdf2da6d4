// The extension's service worker lives as long as the browser: what it remembers per origin, tab or request is a
// Map kept to its newest entries, so that it cannot grow with the session. A Map iterates in insertion order, so
// deleting a key before setting it again makes the order one of recency.

/** Sets `key` as the newest entry of `map`; past `limit` entries the oldest is forgotten. */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > limit) {
    const oldest = map.keys().next();
    if (oldest.done === true) break;
    map.delete(oldest.value);
  }
}
