#!/usr/bin/env bash
# `npm run bench -- NAME [--rounds N]`: benchmarks need root (network namespaces) and the set-up.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/python ] || bash tests/tools/setup.sh
source tests/tools/no-proxy.sh
cd tests
exec ../.venv/bin/python -m bench "$@"
