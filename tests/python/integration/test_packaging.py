"""The helper as users get it: the sdist and wheel that `npm run package` builds hold real copies of shared/'s
schema and identity (not links), and a wheel installed into a fresh virtual environment runs: `lanefetch`,
`lanefetch install`, and a browser-style start of its `lanefetch-host` (checked by doctor's hello).
Also: the one version and the one protocol number agree everywhere they are written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from lanefetch import __version__, protocol
from tools.build_helper_dist import build

REPO = Path(__file__).resolve().parents[3]
SHARED = {"identity.json", "protocol.schema.json"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    files = build(out, offline=True)
    return {f.name.rsplit(".", 1)[-1]: f for f in files}


def test_archives_hold_real_shared_files(dist: dict[str, Path]) -> None:
    assert set(dist) == {"whl", "gz"}
    assert dist["whl"].name == f"lanefetch-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(dist["whl"]) as whl:
        for name in SHARED:
            assert whl.read(f"lanefetch/{name}") == (REPO / "shared" / name).read_bytes()
        entry_points = whl.read(f"lanefetch-{__version__}.dist-info/entry_points.txt").decode()
        assert "lanefetch = lanefetch.cli:main" in entry_points
        assert "lanefetch-host = lanefetch.bridge.host:main" in entry_points
    with tarfile.open(dist["gz"]) as sdist:
        for name in SHARED:
            member = sdist.getmember(f"lanefetch-{__version__}/lanefetch/{name}")
            assert member.isfile(), f"{name} is a link in the sdist"
            data = sdist.extractfile(member)
            assert data is not None and data.read() == (REPO / "shared" / name).read_bytes()


def test_wheel_installs_and_runs_in_a_fresh_venv(dist: dict[str, Path], tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-index", "--no-deps",
                    str(dist["whl"])], check=True, capture_output=True)
    # Dependencies come from the development environment's site-packages (no network in tests); lanefetch itself
    # only from the wheel: the development copy is an editable .pth, which PYTHONPATH entries never read.
    env = {"PYTHONPATH": sysconfig.get_path("purelib"), "PATH": str(venv / "bin"), "HOME": str(tmp_path)}

    def run(*args: str) -> str:
        done = subprocess.run([str(venv / "bin" / "lanefetch"), *args], capture_output=True, text=True, env=env,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    where = subprocess.run([str(py), "-c", "import lanefetch; print(lanefetch.__file__)"], capture_output=True,
                           text=True, env=env, check=True).stdout
    assert Path(where.strip()).is_relative_to(venv)
    assert run("--version").strip() == f"lanefetch {__version__}"
    udd = tmp_path / "udd"
    assert str(venv / "bin" / "lanefetch-host") in run("install", "--chromium-user-data-dir", str(udd))
    report = run("doctor", "--chromium-user-data-dir", str(udd))
    assert f"{venv}/bin/lanefetch-host: lanefetch {__version__} answered hello" in report


def test_one_version_and_one_protocol_number() -> None:
    pkg = json.loads((REPO / "package.json").read_text())
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert pkg["version"] == lock["version"] == lock["packages"][""]["version"] == __version__
    assert protocol.schema()["$defs"]["ProtocolVersion"]["const"] == protocol.PROTOCOL_VERSION
    # the extension's constant is typed by the schema's const (extension/src/generated), so tsc holds it there
    ts = (REPO / "extension/src/bridge/helper-connection.ts").read_text()
    assert re.search(r"export const PROTOCOL_VERSION: ProtocolVersion = \d+;", ts)
    built = REPO / "extension/dist/chromium/manifest.json"
    assert built.exists(), "build first: npm run build"
    assert json.loads(built.read_text())["version"] == __version__
