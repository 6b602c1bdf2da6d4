"""Builds the helper's sdist and wheel into OUTDIR.

native-host/lanefetch/protocol.schema.json and identity.json are symlinks into shared/ in the repository; an sdist
would carry them as links pointing outside itself. So the package is copied with links dereferenced first, and
both archives hold real files. `--offline` builds with the hatchling installed in this Python (the dev extras)
instead of fetching it into an isolated environment."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LEFTOVERS = ("__pycache__", "*.egg-info", "dist", "build", ".mypy_cache", ".ruff_cache")


def build(outdir: Path, offline: bool) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lanefetch-sdist-") as tmp:
        stage = Path(tmp) / "native-host"
        shutil.copytree(REPO / "native-host", stage, symlinks=False, ignore=shutil.ignore_patterns(*LEFTOVERS))
        before = set(outdir.iterdir())
        cmd = [sys.executable, "-m", "build", "--outdir", str(outdir), str(stage)]
        subprocess.run([*cmd, "--no-isolation"] if offline else cmd, check=True, capture_output=offline)
    return sorted(set(outdir.iterdir()) - before)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--offline", action="store_true")
    args = p.parse_args()
    for f in build(args.outdir, args.offline):
        print(f"built {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
