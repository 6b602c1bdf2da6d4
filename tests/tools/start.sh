#!/usr/bin/env bash
# `npm start [-- --headless] [-- --browser firefox]`: set up everything (as `npm run setup`), then the demo:
# the demo site behind an emulated wcdma link, opened in Chromium with lanefetch (tests/demo/).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "npm start needs root: the demo runs the browser and the demo site in network namespaces joined by an" >&2
  echo "emulated slow link (and set-up may install Debian packages). Run it as root, e.g. 'sudo npm start'." >&2
  exit 1
fi
bash tests/tools/setup.sh
source tests/tools/no-proxy.sh
cd tests
exec ../.venv/bin/python -m demo "$@"
