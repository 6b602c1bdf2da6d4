#!/usr/bin/env bash
# One idempotent set-up for a fresh machine: Debian packages, the helper in .venv, node modules, the extension build.
set -euo pipefail
cd "$(dirname "$0")/../.."

apt_packages=(nginx-light apache2 chromium firefox-esr aria2 libnss3-tools iproute2 pipx)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python helper (editable) + dev tools; re-run pip only when pyproject changes.
[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=.venv/.lanefetch-stamp
want=$(sha256sum native-host/pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e 'native-host[dev]'
  echo "$want" > "$stamp"
fi

# Node modules; re-run only when the lock file changes.
if [ -f package-lock.json ]; then
  nstamp=node_modules/.lanefetch-stamp
  nwant=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat "$nstamp" 2>/dev/null)" != "$nwant" ]; then
    npm ci --no-audit --no-fund --loglevel=error
    echo "$nwant" > "$nstamp"
  fi
fi

if node -e 'process.exit(require("./package.json").scripts.build ? 0 : 1)' 2>/dev/null; then
  npm run --silent build
fi
echo "setup: ok (.venv/bin/lanefetch ready)"
