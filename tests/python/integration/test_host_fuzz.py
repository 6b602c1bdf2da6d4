"""A bounded fuzz of the real lanefetch-host process over native messaging: hypothesis writes frames of garbage
bytes, JSON of wrong shapes, deep nesting, huge numbers, batches mixing good requests (to a loopback server started
here) with bad ones, preconnects to bad hosts and https_sites with odd names. Throughout, the one host process
stays alive, every request id it was sent is answered exactly once (end or error), and each bad frame gets an
error back. Only loopback traffic: every bad host is one the helper refuses before any name lookup."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import struct
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from lanefetch import protocol
from local_app import serve_app
from test_bridge import HostProcess, running_host

WAIT = 20  # s: any one wait; it fails loudly with what it waited for
EXAMPLE_LIMIT = 60  # s: one example as a whole
_examples = itertools.count()


@dataclass
class Session:
    """One host process for the whole fuzz run, and what it said."""

    host: HostProcess
    origin: str
    answers: Counter[str] = field(default_factory=Counter)  # our request ids → end/error messages for them
    done_batches: Counter[str] = field(default_factory=Counter)
    said: list[dict[str, Any]] = field(default_factory=list)

    async def recv(self, what: str) -> dict[str, Any]:
        try:
            m = await asyncio.wait_for(self.host.recv(), WAIT)
        except (TimeoutError, asyncio.IncompleteReadError) as e:
            code = self.host.proc.returncode
            raise AssertionError(f"waiting for {what}: {e!r}; host exit code {code}; last said {self.said[-5:]}"
                                 ) from None
        self.said.append(m)
        if m["type"] in ("end", "error") and "id" in m and m["id"].startswith(PREFIX):
            self.answers[m["id"]] += 1
        if m["type"] == "batch_done":
            self.done_batches[m["batch_id"]] += 1
        return m

    async def round_trip(self) -> list[dict[str, Any]]:
        """What the host says until it answers a ping: everything it had to say about what came before (batches
        it started answer later, by id)."""
        nonce = f"n{next(_nonces)}"
        await self.host.send({"type": "ping", "nonce": nonce})
        got = []
        while (m := await self.recv(f"pong {nonce}")) != {"type": "pong", "nonce": nonce}:
            got.append(m)
        return got

    async def until(self, done: Callable[[], bool], what: str) -> None:
        for _ in range(10_000):
            if done():
                return
            await self.recv(what)
        raise AssertionError(f"{what}: never")


_nonces = itertools.count()
PREFIX = "§"  # our request ids: random text from hypothesis does not start with it by chance


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=f"hello {request.match_info['name']}")

    app = web.Application()
    app.router.add_get("/{name}", handler)
    # No Firefox profile: https_sites answers fast, and odd names still meet the code that used to raise.
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    async with serve_app(app) as port, running_host(env, exit_within=20) as host:
        await host.send({"type": "hello", "protocol": 1, "extension_version": "0.1.0", "browser": "firefox"})
        assert (await asyncio.wait_for(host.recv(), WAIT))["type"] == "hello"
        s = Session(host, f"http://127.0.0.1:{port}")
        yield s
        assert host.proc.returncode is None, "the host died"


# -- what hypothesis writes ------------------------------------------------------------------------------------

# Hosts the helper must refuse before any lookup (so no DNS traffic): IDNA-invalid, a label over 63 characters,
# a name over 253, a NUL or a space, a lone surrogate, an empty label.
_BAD_HOST_PART = st.sampled_from(["\u00ad\u00ad..x", "a" * 64, ("a." * 127) + "b", "a\x00b", "a b", "\ud800", "x..y",
                                  "%41", "a" * 64 + ".\u00e9"])
bad_hosts = st.builds(lambda pre, bad: pre + bad, st.text("abc.-", max_size=5), _BAD_HOST_PART)
bad_urls = st.one_of(
    st.builds(lambda h: f"http://{h}/x", bad_hosts),
    st.sampled_from(["ftp://127.0.0.1/x", "http:///x", "http://user:pw@127.0.0.1/", "http://[::1/x",
                     "http://127.0.0.1:99999/", "http://127.0.0.1/a b"]),
)
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.text(max_size=20))
json_values = st.recursive(_JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
_TYPES = ["hello", "batch", "cancel", "ping", "proxy_open", "proxy_close", "cache", "interfaces", "https_sites",
          "preconnect", "nonsense"]
wrong_shapes = st.one_of(
    json_values,
    st.builds(lambda t, rest: {**rest, "type": t} if isinstance(rest, dict) else {"type": t, "x": rest},
              st.sampled_from(_TYPES), json_values),
)


def _ids() -> Callable[[], str]:
    n = itertools.count()
    ex = next(_examples)
    return lambda: f"{PREFIX}{ex}-{next(n)}"


good_reqs = st.builds(lambda name: ("good", name), st.text("abcdefghij", min_size=1, max_size=8))
bad_url_reqs = st.builds(lambda url: ("bad_url", url), bad_urls)
invalid_reqs = st.sampled_from([("invalid", {"method": "get"}), ("invalid", {"headers": {"a": "b"}}),
                                ("invalid", {"extra": 1}), ("invalid", {"headers": [["", "x"]]}),
                                ("invalid", {"method": "GET", "body": "not base64!"})])
actions = st.one_of(
    st.tuples(st.just("garbage"), st.binary(min_size=0, max_size=300)),
    st.tuples(st.just("shape"), wrong_shapes),
    st.tuples(st.just("deep"), st.integers(33, 50_000)),
    st.tuples(st.just("huge_int"), st.integers(41, 20_000)),
    st.tuples(st.just("batch"), st.lists(st.one_of(good_reqs, bad_url_reqs, invalid_reqs), min_size=1, max_size=12)),
    st.tuples(st.just("preconnect"), bad_urls),
    st.tuples(st.just("https_sites"), st.lists(st.builds(lambda p, b: p + b, st.text(max_size=4), _BAD_HOST_PART),
                                               min_size=1, max_size=5)),
)


# -- the fuzz ----------------------------------------------------------------------------------------------------


def _is_valid_message(data: bytes) -> bool:
    try:
        value = json.loads(data)
    except ValueError:
        return False
    return protocol.check(value, "ToHost") is None


async def _run(s: Session, plan: list[tuple[str, Any]]) -> None:
    new_id = _ids()
    ours: list[str] = []
    batches: list[str] = []
    for kind, arg in plan:
        if kind in ("garbage", "shape"):
            data = arg if kind == "garbage" else json.dumps(arg).encode()
            if _is_valid_message(data):
                continue  # by chance a real message: not what this is about
            await s.host.send(struct.pack("=I", len(data)) + data)
            said = await s.round_trip()
            assert [m for m in said if m["type"] == "error" and "id" not in m], f"no error for {data[:200]!r}"
        elif kind in ("deep", "huge_int"):
            # A batch refused whole (it does not parse under the limits): its requests are answered one by one.
            rids = [new_id(), new_id()]
            ours += rids
            body = json.dumps({"type": "batch", "batch_id": new_id(), "page": {"address_space": "loopback"},
                               "requests": [{"id": r, "method": "GET", "url": f"{s.origin}/a", "headers": []}
                                            for r in rids]})
            extra = ("[" * arg + "]" * arg) if kind == "deep" else "7" * arg
            data = (body[:-1] + f',"x":{extra}}}').encode()
            await s.host.send(struct.pack("=I", len(data)) + data)
            said = await s.round_trip()
            assert [m for m in said if m["type"] == "error" and "id" not in m], f"no error for a {kind} frame"
        elif kind == "batch":
            bid = new_id()
            reqs: list[tuple[str, str]] = []
            raws = []
            for what, detail in arg:
                rid = new_id()
                raw = {"id": rid, "method": "GET", "url": f"{s.origin}/{rid[-3:]}", "headers": []}
                if what == "good":
                    raw["url"] = f"{s.origin}/{detail}"
                elif what == "bad_url":
                    raw["url"] = detail
                else:
                    raw.update(detail)
                raws.append(raw)
                reqs.append((rid, "end" if what == "good" else "error"))
            ours += [r for r, _ in reqs]
            await s.host.send({"type": "batch", "batch_id": bid, "page": {"address_space": "loopback"},
                               "requests": raws})
            if any(outcome == "end" for _, outcome in reqs):
                batches.append(bid)
            said = await s.round_trip()
            whole = [m for m in said if m["type"] == "error" and "id" not in m]
            # Only a batch without one valid request is refused as a whole (and each request still named).
            assert bool(whole) == all(what == "invalid" for what, _ in arg), said
            await s.until(lambda reqs=reqs: all(s.answers[r] for r, _ in reqs), f"answers to batch {bid}")
            final = {m["id"]: m["type"] for m in s.said if m.get("id") in dict(reqs) and m["type"] in ("end", "error")}
            assert final == dict(reqs), (raws, final)
        elif kind == "preconnect":
            await s.host.send({"type": "preconnect", "url": arg, "page": {"address_space": "loopback"}})
            said = await s.round_trip()
            assert not [m for m in said if m["type"] == "error"], said
        elif kind == "https_sites":
            nonce = new_id()
            sites = [{"scope": "domain", "name": name[:253] or "x y"} for name in arg]
            await s.host.send({"type": "https_sites", "sites": sites, "nonce": nonce})
            said = await s.round_trip()
            (state,) = [m for m in said if m["type"] == "https_state" and m.get("nonce") == nonce] or [None]
            assert state is not None, f"no https_state for {sites}: {said}"
            assert {x["state"] for x in state["sites"]} == {"failed"}, state
    await s.until(lambda: all(s.answers[r] for r in ours) and all(s.done_batches[b] for b in batches),
                  "every request answered and every batch done")
    await s.round_trip()  # anything said twice would be here by now
    twice = {r: n for r in ours if (n := s.answers[r]) != 1}
    assert not twice, f"requests not answered exactly once: {twice}"
    assert s.host.proc.returncode is None, "the host died"


# No shrinking: a failure is reported as found, at once (shrinking examples of a live process took minutes).
@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(plan=st.lists(actions, min_size=1, max_size=5))
async def test_the_host_survives_what_hypothesis_writes(session: Session, plan: list[tuple[str, Any]]) -> None:
    try:
        await asyncio.wait_for(_run(session, plan), EXAMPLE_LIMIT)
    except TimeoutError:
        raise AssertionError(f"one example took over {EXAMPLE_LIMIT} s: {plan!r:.2000}") from None
