"""What is kept about an origin across helper restarts (cache/origin_memory.py), table-driven."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lanefetch.cache.origin_memory import (
    BAD_TTL,
    RECORD_TTL,
    ROUND_TRIP_TTL,
    policy_from,
    preconnect_origins,
    record_of,
)
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.pipeline import Misbehaviour
from lanefetch.engine.response_parser import Framing, ResponseHead

NOW = 1_800_000_000.0


def test_nothing_learned_nothing_kept() -> None:
    assert record_of(OriginPolicy(16), NOW) is None


def test_a_proven_origin_starts_where_it_left_off() -> None:
    record = record_of(OriginPolicy(16, PipelineState.GREEN, 16, request_limit=100), NOW)
    assert record is not None
    policy = policy_from(record, 16, NOW + 3600)
    assert policy is not None
    assert policy.state is PipelineState.GREEN and policy.allowed_depth() == 16 and policy.request_limit == 100


def test_the_links_bandwidth_delay_product_is_kept_and_a_bad_one_refused() -> None:
    record = record_of(OriginPolicy(16, link_bdp=300_000), NOW)
    assert record is not None and record["link_bdp"] == 300_000
    policy = policy_from(record, 16, NOW + 60)
    assert policy is not None and policy.link_bdp == 300_000
    for bad in (-1, "300000", 1.5, True):
        assert policy_from({**record, "link_bdp": bad}, 16, NOW + 60) is None
    old = {k: v for k, v in record.items() if k != "link_bdp"}  # a record from before it was kept
    assert (policy := policy_from(old, 16, NOW)) is not None and policy.link_bdp is None


def test_a_round_trip_is_kept_with_its_own_age_and_forgotten_after_a_day() -> None:
    measured = OriginPolicy(16)
    measured.observe_round_trip(0.61)
    measured.observe_round_trip(0.60)  # the smallest: queueing only adds
    measured.observe_round_trip(0.95)
    record = record_of(measured, NOW)  # a round trip alone is worth a record
    assert record is not None and (record["round_trip"], record["round_trip_at"]) == (0.60, NOW)
    policy = policy_from(record, 16, NOW + 3600)
    assert policy is not None and policy.remembered_round_trip == (0.60, NOW) and policy.round_trip is None
    # a session that measured none carries the old one on, as old as it was: never made younger
    carried = record_of(policy, NOW + 3600)
    assert carried is not None and (carried["round_trip"], carried["round_trip_at"]) == (0.60, NOW)
    late = policy_from(carried, 16, NOW + ROUND_TRIP_TTL + 1)
    assert late is not None and late.remembered_round_trip is None, "a day-old round trip still answers"
    # a session that measured one replaces it, whatever it was
    policy.observe_round_trip(0.002)
    fresh = record_of(policy, NOW + 7200)
    assert fresh is not None and (fresh["round_trip"], fresh["round_trip_at"]) == (0.002, NOW + 7200)


@pytest.mark.parametrize("bad", [
    {"round_trip": -0.1, "round_trip_at": NOW}, {"round_trip": "0.6", "round_trip_at": NOW},
    {"round_trip": True, "round_trip_at": NOW}, {"round_trip": 0.6}, {"round_trip_at": NOW},
    {"round_trip": float("nan"), "round_trip_at": NOW}, {"round_trip": 0.6, "round_trip_at": float("inf")},
    {"round_trip": 0.0, "round_trip_at": NOW},  # no link has none: it would hand every page to the browser
])
def test_a_round_trip_that_is_not_ours_is_refused(bad: dict[str, object]) -> None:
    record = record_of(OriginPolicy(16, PipelineState.GREEN, 8), NOW)
    assert record is not None
    assert policy_from({**record, **bad}, 16, NOW) is None
    assert policy_from(record, 16, NOW) is not None  # a record from before round trips were kept


@given(st.lists(st.floats(min_value=0, max_value=10, allow_nan=False, exclude_min=True), min_size=1, max_size=8),
       st.floats(min_value=0, max_value=ROUND_TRIP_TTL))
def test_what_is_remembered_is_the_smallest_round_trip_measured(samples: list[float], age: float) -> None:
    policy = OriginPolicy(16)
    for s in samples:
        policy.observe_round_trip(s)
    record = record_of(policy, NOW)
    assert record is not None
    again = policy_from(record, 16, NOW + age)
    assert again is not None and again.remembered_round_trip == (min(samples), NOW)


def test_a_round_trip_of_nothing_is_no_sample() -> None:
    policy = OriginPolicy(16)
    policy.observe_round_trip(0.0)
    assert policy.round_trip is None and record_of(policy, NOW) is None


def test_a_keepalive_limit_alone_is_kept() -> None:
    record = record_of(OriginPolicy(16, request_limit=10), NOW)
    assert record is not None and record["request_limit"] == 10


@pytest.mark.parametrize(("state", "age", "kept"), [
    (PipelineState.GREEN, RECORD_TTL - 1, True),
    (PipelineState.GREEN, RECORD_TTL + 1, False),
    (PipelineState.RED, BAD_TTL - 1, True),
    (PipelineState.RED, BAD_TTL + 1, False),  # a fixed server gets another chance sooner
    (PipelineState.GREEN, -60, False),  # learned in the future: a clock jump, not knowledge
])
def test_records_expire(state: PipelineState, age: float, kept: bool) -> None:
    record = record_of(OriginPolicy(16, state, 8), NOW)
    assert record is not None
    assert (policy_from(record, 16, NOW + age) is not None) is kept


def test_a_demoted_origin_stays_demoted_and_says_why() -> None:
    record = record_of(OriginPolicy(16, PipelineState.RED, 1), NOW)
    assert record is not None
    policy = policy_from(record, 16, NOW)
    assert policy is not None and policy.allowed_depth() == 1 and policy.demotions


@pytest.mark.parametrize("record", [
    {}, {"state": "purple", "depth": 4, "learned_at": NOW}, {"state": "green", "depth": "x", "learned_at": NOW},
    {"state": "green", "depth": 4, "learned_at": NOW, "request_limit": 0},
    {"state": "green", "depth": 4, "learned_at": NOW, "request_limit": "10"},
    {"state": "green", "depth": float("inf"), "learned_at": NOW},  # a damaged row: JSON reads 1e999 as inf
    {"state": "green", "depth": float("-inf"), "learned_at": NOW},
])
def test_a_record_that_is_not_ours_is_ignored(record: dict[str, object]) -> None:
    assert policy_from(record, 16, NOW) is None


def test_depth_never_beyond_this_sessions_maximum() -> None:
    record = record_of(OriginPolicy(32, PipelineState.GREEN, 32), NOW)
    assert record is not None
    policy = policy_from(record, 8, NOW)
    assert policy is not None and policy.allowed_depth() == 8


@pytest.mark.parametrize("protocol", ["h2", "http/1.1"])
def test_the_protocol_is_kept_so_an_http1_origin_opens_its_connections_at_once(protocol: str) -> None:
    learned = OriginPolicy(16)
    learned.learn_protocol(protocol)
    record = record_of(learned, NOW)  # the protocol alone is worth keeping: it decides the first batch's connections
    assert record is not None and record["protocol"] == protocol
    policy = policy_from(record, 16, NOW + 60)
    assert policy is not None and policy.protocol == protocol


def test_an_unknown_protocol_is_not_ours() -> None:
    record = record_of(OriginPolicy(16, PipelineState.GREEN, 8), NOW)
    assert record is not None
    assert policy_from({**record, "protocol": "spdy/3"}, 16, NOW) is None
    assert policy_from({**record, "protocol": None}, 16, NOW) is not None


def _kept(state: PipelineState, at: float) -> dict[str, object]:
    record = record_of(OriginPolicy(16, state, 4), at)
    assert record is not None
    return record


@pytest.mark.parametrize(("records", "limit", "connect"), [
    ({}, 8, []),
    ({"https://a": _kept(PipelineState.GREEN, NOW - 10), "https://b": _kept(PipelineState.GREEN, NOW - 5)}, 8,
     ["https://b", "https://a"]),  # the most recently learned first
    ({"https://a": _kept(PipelineState.GREEN, NOW - RECORD_TTL - 1), "https://b": _kept(PipelineState.RED, NOW)}, 8,
     ["https://b"]),  # an expired record is no knowledge; a demoted origin is still one the page uses
    ({f"https://o{i}": _kept(PipelineState.GREEN, NOW - i) for i in range(12)}, 3,
     ["https://o0", "https://o1", "https://o2"]),
    ({"https://a": {"state": "purple", "depth": 1, "learned_at": NOW}}, 8, []),
    ({"https://a": _kept(PipelineState.GREEN, NOW)}, 0, []),
])
def test_preconnect_origins(records: dict[str, dict[str, object]], limit: int, connect: list[str]) -> None:
    assert preconnect_origins(records, NOW, limit) == connect


def _answered(policy: OriginPolicy, *, pipelined: bool) -> None:
    """A sound keep-alive HTTP/1.1 answer came back on one of the session's connections."""
    policy.on_response(ResponseHead(200, "OK", "1.1", []), Framing.LENGTH, keep_alive=True, pipelined=pipelined)


def test_a_verdict_only_carried_on_keeps_its_age_so_it_expires() -> None:
    red = record_of(OriginPolicy(16, PipelineState.RED, 1), NOW)
    assert red is not None
    # Sessions that use a demoted origin never pipeline to it, so they judge it anew never: written at each batch's
    # end, its record must still expire a day after the demotion (a fixed server's other chance).
    policy = policy_from(red, 16, NOW + 3600)
    assert policy is not None
    _answered(policy, pipelined=False)
    policy.learn_protocol("http/1.1")  # what a handshake says is no verdict on pipelining
    carried = record_of(policy, NOW + BAD_TTL - 60)
    assert carried is not None and policy_from(carried, 16, NOW + BAD_TTL + 60) is None, \
        "re-stamped at each save: a demoted origin never gets another chance"
    # A proven origin answering only alone this session proved nothing more about pipelining.
    green = policy_from(_kept(PipelineState.GREEN, NOW), 16, NOW + 60)
    assert green is not None
    _answered(green, pipelined=False)
    assert record_of(green, NOW + 7200) == {**_kept(PipelineState.GREEN, NOW), "depth": green.depth}


@pytest.mark.parametrize(("state", "pipelined"), [
    (PipelineState.GREEN, True),  # a pipelined answer came back right again
    (PipelineState.PROBING, False),  # keep-alive proven again
    (PipelineState.UNKNOWN, False),  # a record of its protocol only: judged for the first time
])
def test_a_verdict_judged_anew_is_kept_as_learned_now(state: PipelineState, pipelined: bool) -> None:
    record = record_of(OriginPolicy(16, state, 4, protocol="http/1.1"), NOW)
    assert record is not None
    policy = policy_from(record, 16, NOW + 60)
    assert policy is not None
    _answered(policy, pipelined=pipelined)
    again = record_of(policy, NOW + 7200)
    assert again is not None and again["learned_at"] == NOW + 7200


def test_a_demotion_this_session_is_kept_as_learned_now() -> None:
    policy = policy_from(_kept(PipelineState.GREEN, NOW), 16, NOW + 60)
    assert policy is not None
    policy.demote(Misbehaviour.DESYNC)
    demoted = record_of(policy, NOW + 7200)
    assert demoted is not None and demoted["state"] == "red" and demoted["learned_at"] == NOW + 7200


def test_an_h2_origins_record_is_kept_as_learned_now_by_a_handshake() -> None:
    # HTTP/2 never judges pipelining: the record of an h2 origin holds no verdict, only what its handshakes say.
    learned = OriginPolicy(16, link_bdp=300_000)
    learned.learn_protocol("h2")
    record = record_of(learned, NOW)
    assert record is not None
    policy = policy_from(record, 16, NOW + RECORD_TTL - 60)
    assert policy is not None
    policy.learn_protocol("h2")  # this session's handshake said it again
    again = record_of(policy, NOW + RECORD_TTL - 30)
    assert again is not None and policy_from(again, 16, NOW + RECORD_TTL + 60) is not None, \
        "an h2 origin used every day forgotten once a week"
