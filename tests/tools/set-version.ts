// `npm run version -- X.Y.Z`: writes one release version everywhere it lives — package.json (the extension
// build reads it into manifest.json), package-lock.json and the helper's lanefetch/__init__.py (the wheel's
// version). tests/python/integration/test_packaging.py checks they agree. The protocol number is separate: it changes only
// when shared/protocol.schema.json's ProtocolVersion const does.
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(import.meta.url), "../../..");
const version = process.argv[2] ?? "";
// Browsers accept 1–4 dot-separated integers up to 65535, no pre-release labels; PEP 440 accepts these too.
const parts = version.split(".");
if (!/^\d+\.\d+\.\d+$/.test(version) || parts.some((p) => Number(p) > 65535 || (p.length > 1 && p.startsWith("0")))) {
  console.error(`usage: npm run version -- X.Y.Z (three integers 0–65535, got ${JSON.stringify(version)})`);
  process.exit(2);
}

function editJson(path: string, edit: (data: Record<string, unknown>) => void): void {
  const data = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  edit(data);
  writeFileSync(path, JSON.stringify(data, null, 2) + "\n");
}

editJson(join(root, "package.json"), (d) => {
  d.version = version;
});
editJson(join(root, "package-lock.json"), (d) => {
  d.version = version;
  const self = (d.packages as Record<string, Record<string, unknown>>)[""];
  if (self) self.version = version;
});
const init = join(root, "native-host/lanefetch/__init__.py");
const text = readFileSync(init, "utf8");
const next = text.replace(/^__version__ = ".*"$/m, `__version__ = "${version}"`);
if (next === text && !text.includes(`__version__ = "${version}"`)) throw new Error(`${init}: no __version__ line`);
writeFileSync(init, next);
console.log(`version ${version}: package.json, package-lock.json, native-host/lanefetch/__init__.py`);
console.log("next: add a CHANGELOG.md section, npm run build (manifest.json), npm run package");
