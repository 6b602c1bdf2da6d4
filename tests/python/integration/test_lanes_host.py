"""Lanes through the real lanefetch-host process: the options page's interfaces messages (list, set one
interface's policy, bad input refused with nothing changed) on the same policy file as `lanefetch interfaces`, and a
split request to a loopback origin (served over the default route: an interface-bound lane cannot reach it), also
through a Firefox page context's split port."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from lanefetch.lanes.interfaces import InterfacePolicy, PolicyStore
from local_app import serve_app
from test_bridge import HostProcess, running_host
from test_proxy import firefox_hello, through_proxy


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    return tmp_path / "config"


@pytest.fixture
async def host(tmp_path: Path, config_home: Path) -> AsyncIterator[HostProcess]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    async with running_host(env, exit_within=20) as h:
        yield h


async def interfaces(host: HostProcess, nonce: str, **command: Any) -> dict[str, Any]:
    await host.send({"type": "interfaces", "action": "set" if "name" in command else "list", "nonce": nonce,
                     **command})
    answers = [m for m in await host.until("interfaces_state") if m["type"] == "interfaces_state"]
    assert answers[-1]["nonce"] == nonce
    return answers[-1]


def cli(config_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lanefetch", "interfaces", *args], capture_output=True, text=True,
                          env={**os.environ, "XDG_CONFIG_HOME": str(config_home)}, timeout=60, check=False)


async def test_options_page_lists_and_sets_interface_policy(host: HostProcess, config_home: Path) -> None:
    await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "chromium"})
    assert "interfaces" in (await host.recv())["capabilities"]
    policy_file = config_home / "lanefetch" / "interfaces.json"

    listed = await interfaces(host, "l1")
    assert listed["policy_file"] == str(policy_file) and "error" not in listed
    lo = next(i for i in listed["interfaces"] if i["name"] == "lo")
    assert lo["present"] and lo["why_not"] == "loopback" and "127.0.0.1" in lo["addresses"]
    assert (lo["enabled"], lo["weight"], lo["metered"], lo["daily_cap_bytes"]) == (True, 1.0, False, None)
    assert not policy_file.exists()  # listing writes nothing

    changed = await interfaces(host, "s1", name="lo", policy={"weight": 2.5, "daily_cap_bytes": 1000000,
                                                               "enabled": False})
    lo = next(i for i in changed["interfaces"] if i["name"] == "lo")
    assert "error" not in changed and (lo["weight"], lo["daily_cap_bytes"], lo["enabled"]) == (2.5, 1000000, False)
    saved = json.loads(policy_file.read_text())["interfaces"]["lo"]
    assert saved == {"enabled": False, "weight": 2.5, "metered": False, "daily_cap_bytes": 1000000}

    # The CLI works on the same file: its change keeps the helper's, and the helper lists it.
    out = cli(config_home, "set", "lo", "--metered")
    assert out.returncode == 0, out.stdout
    lo = next(i for i in (await interfaces(host, "l2"))["interfaces"] if i["name"] == "lo")
    assert (lo["metered"], lo["weight"], lo["enabled"]) == (True, 2.5, False)
    before = policy_file.read_bytes()

    # Bad input: a clear error, nothing changed.
    unknown = await interfaces(host, "s2", name="nosuch0", policy={"weight": 3})
    assert "no interface named 'nosuch0'" in unknown["error"] and unknown["interfaces"]
    for bad, words in [({"weight": 0}, "weight"), ({"daily_cap_bytes": -5}, "daily_cap_bytes")]:
        refused = await interfaces(host, "s3", name="lo", policy=bad)
        assert refused["error"].startswith("not changed:") and words in refused["error"], refused
    assert cli(config_home, "set", "lo", "--weight", "-1").returncode == 2
    assert cli(config_home, "set", "lo", "--daily-cap", "-1").returncode == 2
    assert policy_file.read_bytes() == before

    # Null or 0 removes the cap.
    lo = next(i for i in (await interfaces(host, "s4", name="lo", policy={"daily_cap_bytes": None}))["interfaces"]
              if i["name"] == "lo")
    assert lo["daily_cap_bytes"] is None and lo["weight"] == 2.5

    # An interface the policy names but this machine lacks is listed and may be set (a phone not plugged in).
    policy_file.write_text(json.dumps({"interfaces": {"usb9": {"weight": 0.5}}}))
    usb = next(i for i in (await interfaces(host, "l3"))["interfaces"] if i["name"] == "usb9")
    assert (usb["present"], usb["why_not"], usb["binding"], usb["weight"]) == (False, "not present", None, 0.5)
    assert "error" not in await interfaces(host, "s5", name="usb9", policy={"metered": True})

    # A file the user broke is reported and never overwritten.
    policy_file.write_text("{ not json")
    assert "cannot read the interface policy" in (await interfaces(host, "l4"))["error"]
    assert "cannot read" in (await interfaces(host, "s6", name="lo", policy={"weight": 1}))["error"]
    assert policy_file.read_text() == "{ not json"


def test_saves_keep_each_others_changes(tmp_path: Path) -> None:
    """A helper counting a split download's bytes and the user setting a policy meanwhile: both survive."""
    path = tmp_path / "interfaces.json"
    helper = PolicyStore.load(path)  # loaded when its lanes were chosen
    user = PolicyStore.load(path)
    user.set_policy("wlan0", InterfacePolicy(weight=3.0, metered=True))
    user.save()
    helper.count("eth0", 1000)
    helper.save()
    helper.count("eth0", 500)
    helper.save()
    final = PolicyStore.load(path)
    assert final.policy("wlan0") == InterfacePolicy(weight=3.0, metered=True)
    assert final.used_today("eth0") == 1500 and helper.policy("wlan0").weight == 3.0


@pytest.fixture
async def ranged_origin(tmp_path: Path) -> AsyncIterator[tuple[str, bytes, list[str | None]]]:
    body = os.urandom(2 * 1024 * 1024 + 333)
    (tmp_path / "big.bin").write_bytes(body)
    ranges: list[str | None] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        ranges.append(request.headers.get("Range"))
        return web.FileResponse(tmp_path / "big.bin")  # answers Range and If-Range

    app = web.Application()
    app.router.add_get("/big.bin", handler)
    async with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}/big.bin", body, ranges


async def test_split_to_loopback_uses_the_default_route(
    host: HostProcess, ranged_origin: tuple[str, bytes, list[str | None]]
) -> None:
    """Whatever interfaces this machine has (their lanes cannot reach 127.0.0.1), a split request to loopback
    arrives exact, as byte ranges, with per-lane timing."""
    url, body, ranges = ranged_origin
    await host.send({"type": "batch", "batch_id": "b1", "page": {"address_space": "loopback"},
                     "requests": [{"id": "big", "method": "GET", "url": url, "headers": [], "split": True}]})
    msgs = await host.until("batch_done")
    assert not [m for m in msgs if m["type"] == "error"]
    got = b"".join(base64.b64decode(m["data"]) for m in msgs if m["type"] == "body")
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(body).hexdigest()
    (head,) = [m for m in msgs if m["type"] == "head"]
    assert head["status"] == 200
    (timing,) = [m for m in msgs if m["type"] == "timing"]
    (lane,) = timing["lanes"]  # one lane, not bound to an interface
    assert lane["interface"] is None and lane["bytes"] >= len(body)
    assert len(ranges) >= 2 and all(r is not None and r.startswith("bytes=") for r in ranges)


async def test_firefox_split_port_fetches_as_ranges(
    host: HostProcess, ranged_origin: tuple[str, bytes, list[str | None]]
) -> None:
    """Proxy mode: a GET through the context's split port is fetched as byte ranges and streamed back exact; the same
    request through its plain port is fetched whole, and one carrying its own Range goes as it is."""
    url, body, ranges = ranged_origin
    auth = [("Proxy-Authorization", await firefox_hello(host))]
    await host.send({"type": "proxy_open", "context_id": "c1", "page": {"address_space": "loopback", "top_site": "http://t"}})
    ready = await host.recv()
    port, split_port = ready["port"], ready["split_port"]
    assert ready["type"] == "proxy_ready" and split_port != port

    plain = await through_proxy(port, "GET", url, auth)
    assert plain is not None and plain.body == body and ranges == [None]

    ranges.clear()
    split = await through_proxy(split_port, "GET", url, auth)
    assert split is not None and split.status == 200 and split.header("Content-Length") == str(len(body))
    assert hashlib.sha256(split.body).hexdigest() == hashlib.sha256(body).hexdigest()
    assert len(ranges) >= 2 and all(r is not None and r.startswith("bytes=") for r in ranges), ranges
    timings = [m for m in await host.until("timing") if m["type"] == "timing"]
    timings += [m for m in await host.until("timing") if m["type"] == "timing"]
    assert [len(t.get("lanes") or []) for t in timings] == [0, 1], "the split request's timing has its lane"

    ranges.clear()
    own = await through_proxy(split_port, "GET", url, [*auth, ("Range", "bytes=10-19")])
    assert own is not None and own.status == 206 and own.body == body[10:20] and ranges == ["bytes=10-19"]

    # Only the extension may use the split port too.
    refused = await through_proxy(split_port, "GET", url, [])
    assert refused is not None and refused.status == 407
