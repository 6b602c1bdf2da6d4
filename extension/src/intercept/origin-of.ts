// How the intercept rules (and what follows them) key their state by URL: the origin of a URL, and a URL without
// its fragment (what goes on the wire, and what names a page).

/** `new URL(url).origin`, "" for what is not a URL (so that it never matches a real origin). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

/** The URL without its fragment. */
export function withoutFragment(url: string): string {
  const hash = url.indexOf("#");
  return hash < 0 ? url : url.slice(0, hash);
}
