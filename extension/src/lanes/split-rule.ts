// Which requests the extension asks the helper to split over its lanes (several network interfaces), when the user
// turned "split large downloads" on. The helper only splits once its first ~20 KB range shows a larger body, so a
// small body marked by mistake costs no extra bytes, but split requests travel on connections of their own, never
// pipelined with the page's small ones: mark only what is likely large, never every image.
import type { ResourceType } from "../generated/protocol.js";

/** storage.local key: true = split large downloads over several interfaces (off unless the user turns it on). */
export const SPLIT_LARGE_KEY = "splitLargeDownloads";

/**
 * Bodies above this go to the browser (Fetch.continueRequest; the helper's request is cancelled as soon as its
 * head shows the size, after the first range). Chromium cannot stream a fulfil: the whole body is held in the
 * extension and handed over at once (10 MB ~0.4 s, 50 MB ~3.9 s measured), so the limit for other requests is 8 MiB.
 * A split request is worth that cost up to a few seconds, on a link slow enough that the lanes pay.
 */
export const SPLIT_MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * Types a large file arrives as: fetch/XHR of data, `<object>`/`<embed>` and the like ("other"). Media elements
 * are left to the browser whole (they send Range requests and keep their own media cache: pass-through-policy.ts).
 */
const SPLIT_TYPES: ReadonlySet<ResourceType> = new Set<ResourceType>(["fetch", "xhr", "other"]);

/** File name endings of what is usually large (archives, images of disks and packages, media, models, documents). */
const LARGE_EXTENSIONS: ReadonlySet<string> = new Set([
  "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "tar", "iso", "img", "dmg", "exe", "msi", "deb", "rpm", "apk",
  "appimage", "pkg", "bin", "dat", "pdf", "mp4", "m4v", "mkv", "webm", "mov", "avi", "mp3", "m4a", "ogg", "oga",
  "flac", "wav", "wasm", "onnx", "gguf", "safetensors", "pbf", "glb", "parquet",
]);

export function likelyLarge(url: string, resourceType: ResourceType): boolean {
  if (!SPLIT_TYPES.has(resourceType)) return false;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return false;
  }
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  const dot = name.lastIndexOf(".");
  return dot > 0 && LARGE_EXTENSIONS.has(name.slice(dot + 1));
}
