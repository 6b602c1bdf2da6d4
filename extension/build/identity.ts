// Reads shared/identity.json: the extension IDs and native host name shared with the helper's installer.
import { readFileSync } from "node:fs";

export interface Identity {
  native_host_name: string;
  chromium_extension_id: string;
  chromium_manifest_key: string;
  firefox_extension_id: string;
}

export function readIdentity(path: string): Identity {
  const raw = JSON.parse(readFileSync(path, "utf8")) as Partial<Identity>;
  for (const field of ["native_host_name", "chromium_extension_id", "chromium_manifest_key", "firefox_extension_id"] as const) {
    if (typeof raw[field] !== "string" || raw[field] === "") throw new Error(`${path}: missing ${field}`);
  }
  return raw as Identity;
}
