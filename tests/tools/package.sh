#!/usr/bin/env bash
# `npm run package`: what a release ships, each piece checked.
#   native-host/dist/     the helper's sdist and wheel (shared/ files copied in, not linked), then installed with
#                         pipx into a scratch directory: `lanefetch` runs, `lanefetch install` registers it and
#                         `lanefetch doctor` gets hello from the installed lanefetch-host
#   extension/dist/store/ lanefetch-chromium-X.zip for the Chrome Web Store (manifest without `key`: the store
#                         rejects it and assigns the ID itself) and lanefetch-firefox-X.zip for AMO (web-ext lint
#                         clean on the archive itself)
# Needs network for pip/pipx (build isolation, the helper's dependencies); run after `npm run setup`.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$PATH"
version=$(node -p 'require("./package.json").version')
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "== helper $version: sdist + wheel"
rm -rf native-host/dist
.venv/bin/python tests/tools/build_helper_dist.py native-host/dist
wheel=native-host/dist/lanefetch-$version-py3-none-any.whl
[ -f "$wheel" ] || { echo "package: $wheel was not built" >&2; exit 1; }

echo "== helper: pipx install from the wheel (scratch PIPX_HOME)"
if command -v pipx >/dev/null; then
  PIPX_HOME="$scratch/pipx" PIPX_BIN_DIR="$scratch/bin" pipx install "$wheel" >"$scratch/pipx.log" || { cat "$scratch/pipx.log" >&2; exit 1; }
  bin="$scratch/bin"
else
  echo "package: pipx not found (Debian: apt-get install pipx); checking with a fresh venv instead"
  python3 -m venv "$scratch/venv" && "$scratch/venv/bin/pip" install -q "$wheel"
  bin="$scratch/venv/bin"
fi
[ "$("$bin/lanefetch" --version)" = "lanefetch $version" ]
"$bin/lanefetch" install --browser chromium --chromium-user-data-dir "$scratch/udd"
"$bin/lanefetch" doctor --browser chromium --chromium-user-data-dir "$scratch/udd" | tee "$scratch/doctor.txt"
grep -q "lanefetch-host: lanefetch $version answered hello" "$scratch/doctor.txt"

echo "== extension $version: store archives"
store=extension/dist/store
rm -rf "$store" && mkdir -p "$store"
tsx extension/build/build.ts chromium
cp -r extension/dist/chromium "$scratch/chromium"
node -e '
  const fs = require("fs"), f = process.argv[1], m = JSON.parse(fs.readFileSync(f, "utf8"));
  delete m.key;  // the Web Store refuses manifests with "key"; the store ID then comes from the store
  fs.writeFileSync(f, JSON.stringify(m, null, 2) + "\n");' "$scratch/chromium/manifest.json"
web-ext build --source-dir "$scratch/chromium" --artifacts-dir "$store" --filename "lanefetch-chromium-$version.zip" \
  --ignore-files "**/*.map" --overwrite-dest >/dev/null
echo "built $store/lanefetch-chromium-$version.zip"

tsx extension/build/build.ts firefox
web-ext build --source-dir extension/dist/firefox --artifacts-dir "$store" --filename "lanefetch-firefox-$version.zip" \
  --ignore-files "**/*.map" --overwrite-dest >/dev/null
# AMO's linter on exactly what is uploaded (the archive, without source maps), warnings count as failures.
.venv/bin/python -m zipfile -e "$store/lanefetch-firefox-$version.zip" "$scratch/firefox-archive"
web-ext lint --source-dir "$scratch/firefox-archive" --warnings-as-errors
echo "built $store/lanefetch-firefox-$version.zip"
ls -l native-host/dist "$store"
