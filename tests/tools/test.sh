#!/usr/bin/env bash
# Every check and test suite; run through `npm test` (which runs setup first).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
# The tests talk only to loopback and namespaces they make. A proxy in this shell's environment (setup above may have
# needed it) would be the system proxy of every browser and helper they start, and lanefetch stays off under one;
# the tests that check that set their own.
unset http_proxy https_proxy all_proxy ftp_proxy no_proxy auto_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY FTP_PROXY NO_PROXY SOCKS_SERVER

echo "== ruff"; ruff check --config native-host/pyproject.toml native-host tests
echo "== mypy"; mypy --config-file native-host/pyproject.toml native-host/lanefetch
echo "== pytest"; pytest -c tests/pytest.ini
if node -e 'process.exit(require("./package.json").scripts["test:ts"] ? 0 : 1)' 2>/dev/null; then
  echo "== typescript"; npm run --silent test:ts
fi
