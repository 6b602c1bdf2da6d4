"""Split fetches on loopback against scripted servers: the split shell's decisions (whole body in the
first exchange, split with If-Range, Range ignored, resource changed, no validator, empty body) with
two or three unbound lanes, and the speculative ranges the other lanes send before the first answer
(unused on small bodies, closed when Range is ignored, fetched again when of another version). Real links
and real nginx: test_lanes_netns.py."""

from __future__ import annotations

import asyncio
import re

import pytest
from lanefetch.engine import EngineConfig, FetchRequest
from lanefetch.lanes.schedule import ScheduleConfig
from lanefetch.lanes.split_fetch import LaneSpec, SplitFetcher
from lanefetch.service import FetchService, ServiceConfig
from misbehaving_servers import (
    LOOPBACK,
    Received,
    RecordingSink,
    ScriptedServer,
    ServerConn,
    content,
    etag,
    response,
)

SMALL = ScheduleConfig(initial_chunk=64 * 1024, min_chunk=16 * 1024, stall_min=1.0, stall_unknown=3.0)


def speculative(req: Received) -> bool:
    """A range asked for before the first answer: not from byte 0, and without If-Range."""
    rng = req.header("range") or ""
    return rng.startswith("bytes=") and not rng.startswith("bytes=0-") and req.header("if-range") is None


def ranged(*, ignore_range: bool = False, change_after: int | None = None, validator: bool = True,
           piece_delay: float = 0.0, speculative_answer: str | None = None) -> object:
    """Answers GETs of /<name>/<size> with content(path), honouring `Range: bytes=a-b` (206 + Content-Range,
    416 past the end) unless ignore_range; If-Range is checked against the ETag. After `change_after`
    requests in total, the resource has a new ETag and body (the old one is gone). speculative_answer:
    "stale" serves speculative ranges from an older version (a stale replica), "whole" answers them 200
    (Range ignored). A 200 goes out in 16 KB pieces, 10 ms apart, and stops when the client closes;
    state["sent"] counts the bytes of each 200 per connection."""

    async def run(conn: ServerConn) -> None:
        state = conn.server.state
        while (req := await conn.next_request()) is not None:
            n = int(state.get("n", 0)) + 1  # type: ignore[call-overload]
            state["n"] = n
            changed = change_after is not None and n > change_after
            version = "/v2" if changed else "/v0" if speculative_answer == "stale" and speculative(req) else ""
            body = content(version + req.path)
            tag = etag(version + req.path)
            hdrs = [("ETag", tag)] if validator else []
            rng = req.header("range")
            if_range = req.header("if-range")
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng or "")
            whole = speculative_answer == "whole" and speculative(req)
            if ignore_range or whole or m is None or (if_range is not None and if_range != tag):
                await conn.send(response(200, headers=hdrs, length=len(body), with_body=False), completes=0)
                sent = state.setdefault("sent", {})
                assert isinstance(sent, dict)
                for i in range(0, len(body), 16384):
                    if conn.client_eof:
                        return
                    piece = body[i : i + 16384]
                    await conn.send(piece, begins=False, completes=int(i + len(piece) == len(body)))
                    sent[conn.index] = sent.get(conn.index, 0) + len(piece)
                    await asyncio.sleep(0.01)
                continue
            if not body or int(m[1]) >= len(body):
                data = response(416, b"", headers=[("Content-Range", f"bytes */{len(body)}")])
            else:
                a, b = int(m[1]), min(int(m[2]), len(body) - 1)
                data = response(206, body[a : b + 1], headers=[*hdrs, ("Content-Range", f"bytes {a}-{b}/{len(body)}")])
            if piece_delay:
                await asyncio.sleep(piece_delay)
            await conn.send(data)

    return run


async def split_fetch(srv: ScriptedServer, path: str, lanes: int = 2, **kw: object) -> RecordingSink:
    fetcher = SplitFetcher(EngineConfig(), [LaneSpec(None) for _ in range(lanes)], schedule=SMALL, **kw)  # type: ignore[arg-type]
    sink = RecordingSink()
    req = FetchRequest(id="big", method="GET", url=srv.url(path), split=True)
    sink.rec(req)
    try:
        await asyncio.wait_for(fetcher.fetch(req, sink, LOOPBACK), 60)
    finally:
        await fetcher.aclose()
    return sink


def ranges_asked(srv: ScriptedServer) -> list[str | None]:
    return [r.header("range") for r in srv.requests]


@pytest.mark.parametrize("lanes", [1, 2, 3])
async def test_large_body_split_exact(lanes: int) -> None:
    path = "/r/big/1500000"
    async with ScriptedServer(ranged()) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path, lanes)
    rec = sink.records["big"]
    assert rec.error is None and rec.head is not None and rec.head.status == 200
    assert bytes(rec.body) == content(path) and rec.end_bytes == len(content(path))
    assert ("Content-Length", "1500000") in rec.head.headers
    assert not any(k.lower() == "content-range" for k, _ in rec.head.headers)
    asked = ranges_asked(srv)
    assert asked[0] == "bytes=0-20479" and len(asked) > 2
    # the other lanes asked for the next 64 KB each before the first answer (so without If-Range) ...
    early = sorted((r.header("range") for r in srv.requests if speculative(r)), key=lambda h: len(h or ""))
    assert early == ["bytes=20480-86015", "bytes=86016-151551"][: lanes - 1]
    # ... and every later range carries the first answer's validator
    assert all(r.header("if-range") == etag(path) for r in srv.requests[1:] if not speculative(r))
    # nothing was asked twice: the speculative ranges were used
    assert sorted(asked, key=str) == sorted(set(asked), key=str)
    assert rec.report is not None and rec.report.lanes is not None and len(rec.report.lanes) == lanes
    assert sum(lane.bytes for lane in rec.report.lanes) >= 1_500_000
    assert len({r.conn for r in srv.requests}) == lanes  # one connection per lane


@pytest.mark.parametrize("size", [0, 1, 1000, 20479, 20480])
async def test_small_body_in_one_exchange(size: int) -> None:
    path = f"/r/small/{size}"
    async with ScriptedServer(ranged()) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    assert rec.error is None and rec.head is not None and rec.head.status == 200
    assert bytes(rec.body) == content(path)
    # one exchange; an empty body answers 416 to the range and is fetched once more without it
    first_lane = [r for r in srv.requests if not speculative(r)]
    assert len(first_lane) == (2 if size == 0 else 1)
    # the other lane's speculative range lies past the end: it was answered 416 and cost nothing else
    assert [r.header("range") for r in srv.requests if speculative(r)] in ([], ["bytes=20480-86015"])


async def test_range_ignored_is_streamed() -> None:
    path = "/r/norange/1500000"
    async with ScriptedServer(ranged(ignore_range=True)) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
        first = next(r.conn for r in srv.requests if not speculative(r))
        sent = srv.state["sent"]
    rec = sink.records["big"]
    assert rec.error is None and rec.head is not None and rec.head.status == 200
    assert bytes(rec.body) == content(path) and len([r for r in srv.requests if not speculative(r)]) == 1
    # the other lane's speculative range got the whole body too: its connection was closed at once
    assert isinstance(sent, dict) and sent[first] == 1_500_000
    assert all(n < 300_000 for conn, n in sent.items() if conn != first), sent


async def test_speculative_range_ignored_is_closed_and_fetched_again() -> None:
    """Only the speculative range is answered 200 (a server that honours Range with If-Range only): that
    lane's connection is closed at once, its bytes are asked for again with If-Range."""
    path = "/r/big/1500000"
    async with ScriptedServer(ranged(speculative_answer="whole")) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
        sent = srv.state["sent"]
    rec = sink.records["big"]
    assert rec.error is None and bytes(rec.body) == content(path)
    assert isinstance(sent, dict) and all(n < 300_000 for n in sent.values()), sent
    again = [r for r in srv.requests if r.header("if-range") and (r.header("range") or "").startswith("bytes=20480-")]
    assert again, [(r.header("range"), r.header("if-range")) for r in srv.requests]


async def test_speculative_range_of_another_version_is_fetched_again() -> None:
    """The speculative range comes from another version of the resource (its ETag differs from the first
    answer's): none of its bytes are used, they are fetched again with If-Range; the body is exact."""
    path = "/r/big/600000"
    async with ScriptedServer(ranged(speculative_answer="stale")) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    assert rec.error is None and bytes(rec.body) == content(path)
    assert content("/v0" + path) != content(path)
    assert any(r.header("if-range") == etag(path) and (r.header("range") or "").startswith("bytes=20480-")
               for r in srv.requests)


@pytest.mark.parametrize("change_after", [1, 2])
async def test_resource_changing_while_a_speculative_range_is_out(change_after: int) -> None:
    """The resource changes between the first request and a speculative one (whichever reaches the server
    first): never a body mixed from two versions — exactly one version, or resource_changed with a prefix
    of one version."""
    path = "/r/flip/800000"
    async with ScriptedServer(ranged(change_after=change_after)) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    versions = [content(path), content("/v2" + path)]
    if rec.error is None:
        assert bytes(rec.body) in versions
    else:
        assert rec.error.code == "resource_changed" and rec.end_bytes is None
        assert any(v.startswith(bytes(rec.body)) for v in versions)


async def test_resource_changed_mid_transfer_fails_cleanly() -> None:
    path = "/r/changing/800000"
    async with ScriptedServer(ranged(change_after=2)) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    assert rec.error is not None and rec.error.code == "resource_changed"
    assert rec.end_bytes is None
    assert bytes(rec.body) == content(path)[: len(rec.body)]  # what went out was the old version's prefix
    assert rec.events.count("error") == 1 and rec.events.count("timing") == 1


async def test_without_validator_the_rest_goes_on_one_lane() -> None:
    path = "/r/notag/400000"
    async with ScriptedServer(ranged(validator=False)) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path, 3)
    rec = sink.records["big"]
    assert rec.error is None and bytes(rec.body) == content(path)
    assert len({r.conn for r in srv.requests if not speculative(r)}) == 1  # the speculative ranges unused
    assert all(r.header("if-range") is None for r in srv.requests)


async def test_engine_routes_split_requests_to_own_connections() -> None:
    """A split request through Engine.fetch uses the lanes' connections, never the pool of the origin's
    small requests (bulk never blocks small)."""
    big, small = "/r/bulk/600000", [f"/r/s{i}/2000" for i in range(6)]
    async with ScriptedServer(ranged()) as srv:  # type: ignore[arg-type]
        engine = FetchService(ServiceConfig(lanes=[]))
        sink = RecordingSink()
        reqs = [FetchRequest(id="big", method="GET", url=srv.url(big), split=True)]
        reqs += [FetchRequest(id=f"s{i}", method="GET", url=srv.url(p)) for i, p in enumerate(small)]
        try:
            await asyncio.wait_for(engine.fetch(reqs, sink, LOOPBACK), 60)
        finally:
            await engine.aclose()
        sink.check_exact(reqs, lambda r: content(r.url.split(str(srv.port), 1)[1]))
        bulk_conns = {r.conn for r in srv.requests if r.path == big}
        small_conns = {r.conn for r in srv.requests if r.path != big}
        assert bulk_conns and not bulk_conns & small_conns


async def test_cancel_split_request() -> None:
    path = "/r/slow/2000000"
    async with ScriptedServer(ranged(piece_delay=0.3)) as srv:  # type: ignore[arg-type]
        engine = FetchService(ServiceConfig(lanes=[]))
        sink = RecordingSink()
        req = FetchRequest(id="big", method="GET", url=srv.url(path), split=True)
        task = asyncio.create_task(engine.fetch([req], sink, LOOPBACK))
        for _ in range(600):  # bounded: 30 s
            await asyncio.sleep(0.05)
            if sink.records.get("big") and sink.records["big"].head is not None:
                break
        else:
            raise AssertionError("the split request's head never arrived, so it could not be cancelled mid-body")
        await engine.cancel(["big"])
        await asyncio.wait_for(task, 30)
        await engine.aclose()
    rec = sink.records["big"]
    assert rec.error is not None and rec.error.code == "cancelled"


async def test_speculative_range_longer_than_its_content_range_is_fetched_again() -> None:
    """A speculative range whose 206 carries more bytes than its Content-Range says, all held before the first
    answer adopts it: it is not usable, its bytes are fetched again with If-Range (they raised in the first lane's
    connection task, and the split hung)."""
    path = "/r/overlong/300000"
    spec_len = 65536 + 1000
    got = {"bytes": 0}

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            body = content(path)
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", req.header("range") or "")
            assert m is not None
            a, b = int(m[1]), int(m[2])
            hdrs = [("ETag", etag(path)), ("Content-Range", f"bytes {a}-{b}/{len(body)}")]
            if speculative(req):  # 1000 bytes beyond its own range
                await conn.send(response(206, body[a : a + spec_len], headers=hdrs))
                continue
            if a == 0:  # answered once the client holds all of the speculative range's bytes
                for _ in range(1000):  # bounded: 10 s
                    if got["bytes"] >= spec_len:
                        break
                    await asyncio.sleep(0.01)
            await conn.send(response(206, body[a : b + 1], headers=hdrs))

    async with ScriptedServer(run) as srv:
        fetcher = SplitFetcher(EngineConfig(), [LaneSpec(None)] * 2, schedule=SMALL)
        fetcher.on_lane_bytes = lambda _rid, _lane, n: got.__setitem__("bytes", got["bytes"] + n)
        sink = RecordingSink()
        req = FetchRequest(id="big", method="GET", url=srv.url(path), split=True)
        sink.rec(req)
        try:
            await asyncio.wait_for(fetcher.fetch(req, sink, LOOPBACK), 20)
        finally:
            await fetcher.aclose()
        again = [r for r in srv.requests if r.header("if-range") and str(r.header("range")).startswith("bytes=20480-")]
    assert got["bytes"] >= spec_len and again, ranges_asked(srv)
    sink.check_exact([req], lambda _: content(path))


async def test_range_answer_shorter_than_its_content_range_fails() -> None:
    """Every range after the first is answered 206 with the right Content-Range but an empty body (Content-Length:
    0): a malformed answer ends the split with protocol_error; the short ranges were asked again without end (here
    until the server gave up after 100 requests)."""
    path = "/r/short/300000"

    async def run(conn: ServerConn) -> None:
        while (req := await conn.next_request()) is not None:
            n = int(conn.server.state.get("n", 0)) + 1  # type: ignore[call-overload]
            conn.server.state["n"] = n
            if n > 100:
                conn.reset()
                return
            body = content(path)
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", req.header("range") or "")
            assert m is not None
            a, b = int(m[1]), min(int(m[2]), len(body) - 1)
            hdrs = [("ETag", etag(path)), ("Content-Range", f"bytes {a}-{b}/{len(body)}")]
            await conn.send(response(206, body[a : b + 1] if a == 0 else b"", headers=hdrs))

    async with ScriptedServer(run) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
        asked = len(srv.requests)
    rec = sink.records["big"]
    assert rec.error is not None and rec.error.code == "protocol_error", (rec.error, asked)
    assert asked < 100 and rec.end_bytes is None
    assert bytes(rec.body) == content(path)[: len(rec.body)]
    sink.check_once([rec.request])


@pytest.mark.parametrize(("size", "content_range", "sent"), [
    (100, "bytes 0-99/100", 50),  # the body ends before its Content-Range does
    (100, "bytes 0-99/50", 100),  # the range ends past the body's total
])
async def test_first_answer_body_not_as_its_content_range_says_fails(size: int, content_range: str, sent: int) -> None:
    """The first range's 206 says it is the whole body, but its own Content-Range and body disagree: never a 200
    whose Content-Length differs from the body delivered under it (the truncated one ended as complete)."""
    path = f"/r/liar/{size}"

    async def run(conn: ServerConn) -> None:
        while await conn.next_request() is not None:
            hdrs = [("ETag", etag(path)), ("Content-Range", content_range)]
            await conn.send(response(206, content(path)[:sent], headers=hdrs))

    async with ScriptedServer(run) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    sink.check_once([rec.request])
    assert rec.error is not None and rec.error.code == "protocol_error" and rec.end_bytes is None, rec.error


async def test_range_broken_mid_body_and_retried_must_be_the_same_range() -> None:
    """A lane's connection breaks mid-range; the engine asks the range again and the server answers another range of
    the same length and ETag (Content-Range shifted by 7 bytes): never spliced after the bytes already received."""
    path = "/r/shift/300000"

    async def run(conn: ServerConn) -> None:
        state = conn.server.state
        while (req := await conn.next_request()) is not None:
            body = content(path)
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", req.header("range") or "")
            assert m is not None
            a, b = int(m[1]), min(int(m[2]), len(body) - 1)
            hdrs = [("ETag", etag(path)), ("Content-Range", f"bytes {a}-{b}/{len(body)}")]
            if a != 0 and state.setdefault("broken", a) == a:  # the first range after the first, and its retry
                if not state.get("retried"):
                    state["retried"] = True
                    data = response(206, body[a : b + 1], headers=hdrs)
                    await conn.send(data[: len(data) // 2])
                    await conn.close(linger=0)
                    return
                hdrs = [("ETag", etag(path)), ("Content-Range", f"bytes {a + 7}-{b + 7}/{len(body)}")]
                a, b = a + 7, b + 7
            await conn.send(response(206, body[a : b + 1], headers=hdrs))

    async with ScriptedServer(run) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path, lanes=1)
        assert srv.state.get("retried")
    rec = sink.records["big"]
    sink.check_once([rec.request])
    assert bytes(rec.body) == content(path)[: len(rec.body)]


@pytest.mark.parametrize("content_range", ["bytes 5-104/1000", None])
async def test_first_answer_partial_but_not_from_byte_0_fails(content_range: str | None) -> None:
    """The first range (bytes=0-…) is answered 206 from another byte, or 206 without a usable Content-Range: the
    caller asked for the whole body, so it never gets that partial answer as its own (it was passed on as a 206)."""
    path = "/r/elsewhere/1000"

    async def run(conn: ServerConn) -> None:
        while await conn.next_request() is not None:
            hdrs = [("ETag", etag(path))] + ([("Content-Range", content_range)] if content_range else [])
            await conn.send(response(206, content(path)[5:105], headers=hdrs))

    async with ScriptedServer(run) as srv:  # type: ignore[arg-type]
        sink = await split_fetch(srv, path)
    rec = sink.records["big"]
    sink.check_once([rec.request])
    assert rec.error is not None and rec.error.code == "protocol_error", (rec.head, rec.error)
    assert rec.head is None and not rec.body
