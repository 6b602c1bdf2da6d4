// The origin of a URL as the intercept rules key their per-origin state: `new URL(url).origin`, "" for what is not
// a URL (so that it never matches a real origin).
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}
