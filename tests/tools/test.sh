#!/usr/bin/env bash
# Every check and test suite; run through `npm test` (which runs setup first).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
source tests/tools/no-proxy.sh

echo "== ruff"; ruff check --config native-host/pyproject.toml native-host tests
echo "== mypy"; mypy --config-file native-host/pyproject.toml native-host/lanefetch
echo "== pytest"; pytest -c tests/pytest.ini
if node -e 'process.exit(require("./package.json").scripts["test:ts"] ? 0 : 1)' 2>/dev/null; then
  echo "== typescript"; npm run --silent test:ts
fi
