"""What the service recalls and keeps of an origin under each top-level site (service.py, cache/origin_memory.py):
what a session learns of an origin is kept apart per site and window kind in memory too (engine.policy_key), so a
site's own record that says the origin misbehaved is not overridden by another site's optimism met earlier in the
session, nor overwritten by it, and neither another site's nor a private window's learning is used or kept as its."""

from __future__ import annotations

import json
import time

from lanefetch.cache.http_cache import HttpCache
from lanefetch.cache.memory_store import MemoryStore
from lanefetch.cache.origin_memory import record_of
from lanefetch.engine import Page
from lanefetch.engine.engine import policy_key
from lanefetch.engine.origin_policy import OriginPolicy, PipelineState
from lanefetch.engine.pipeline import Misbehaviour
from lanefetch.engine.request import parse_target
from lanefetch.service import FetchService

URL = "https://cdn.test/app.js"
SITE_A = Page(top_site="https://a.test")
SITE_B = Page(top_site="https://b.test")


async def test_a_sites_own_demotion_wins_over_another_sites_optimism_met_first() -> None:
    cache = HttpCache(lambda: MemoryStore(1 << 20), max_entry_bytes=1 << 16)
    service = FetchService(records=lambda page: cache)
    try:
        origin = parse_target(URL).origin
        now = time.time()
        green = record_of(OriginPolicy(16, PipelineState.GREEN, 16), now - 3 * 24 * 3600)  # three days old
        red = record_of(OriginPolicy(16, PipelineState.RED, 1), now - 60)  # a minute old: the server broke since
        assert green is not None and red is not None
        cache.learn(SITE_A.partition, {str(origin): json.dumps(green)})
        cache.learn(SITE_B.partition, {str(origin): json.dumps(red)})

        await service.recall(URL, SITE_A)  # a page of site A uses the origin first this session
        await service.recall(URL, SITE_B)  # then one of site B, which learned the origin misbehaves
        policy = service.policies[policy_key(origin, SITE_B)]
        assert policy.allowed_depth() == 1, "site B's fresh demotion was ignored: pipelining at full depth"

        service._remember([origin], SITE_B)  # what B's batch keeps when it ends
        kept = json.loads((await cache.learned(SITE_B.partition, [str(origin)]))[str(origin)])
        assert kept["state"] == "red", "site B's demotion was overwritten by site A's optimism"
    finally:
        await service.aclose()
        await cache.aclose()


async def test_a_record_nested_past_the_json_decoders_limit_is_refused_not_raised() -> None:
    cache = HttpCache(lambda: MemoryStore(1 << 20), max_entry_bytes=1 << 16)
    service = FetchService(records=lambda page: cache)
    try:
        origin = parse_target(URL).origin
        cache.learn(SITE_A.partition, {str(origin): "[" * 100_000 + "]" * 100_000})  # a damaged row
        await service.recall(URL, SITE_A)  # raised RecursionError out of every fetch of the site's pages
        key = policy_key(origin, SITE_A)
        assert key not in service.policies or service.policies[key].state is PipelineState.UNKNOWN
        assert await service.preconnect_site(SITE_A, "tcp") == []
    finally:
        await service.aclose()
        await cache.aclose()


async def test_what_one_site_taught_is_neither_used_nor_kept_under_another() -> None:
    cache = HttpCache(lambda: MemoryStore(1 << 20), max_entry_bytes=1 << 16)
    service = FetchService(records=lambda page: cache)
    try:
        origin = parse_target(URL).origin
        learned = OriginPolicy(16, PipelineState.GREEN, 16)
        learned.learn_protocol("h2")
        learned.observe_round_trip(0.3)
        green = record_of(learned, time.time() - 60)
        assert green is not None
        cache.learn(SITE_A.partition, {str(origin): json.dumps(green)})

        await service.recall(URL, SITE_A)  # a page of site A uses the origin first this session
        assert await service.speaks_h2(URL, SITE_A)
        await service.recall(URL, SITE_B)  # then one of site B, which has learned nothing of it
        assert not await service.speaks_h2(URL, SITE_B), "site A's record decides site B's connections"
        assert service.remembered_round_trip(URL, SITE_B) is None, "site A's round trip told for site B's page"

        service._remember([origin], SITE_B)  # what B's batch keeps when it ends
        kept = await cache.learned(SITE_B.partition, [str(origin)])
        assert kept == {}, f"site A's record was copied under site B: {kept}"
    finally:
        await service.aclose()
        await cache.aclose()


async def test_a_private_windows_learning_is_neither_used_nor_kept_by_a_normal_window() -> None:
    cache = HttpCache(lambda: MemoryStore(1 << 20), max_entry_bytes=1 << 16)
    service = FetchService(records=lambda page: cache)
    private = Page(top_site=SITE_A.top_site, private_browsing=True)
    try:
        origin = parse_target(URL).origin
        green = record_of(OriginPolicy(16, PipelineState.GREEN, 16, protocol="h2"), time.time() - 60)
        assert green is not None
        cache.learn(SITE_A.partition, {str(origin): json.dumps(green)})
        await service.recall(URL, SITE_A)
        await service.recall(URL, private)
        assert not await service.speaks_h2(URL, private), "the normal window's record decides a private window's"

        # What the private window's own connections teach of the origin (its pool's policy, as a connection would).
        taught = service.engine._pool_for(origin, private).policy
        taught.observe_round_trip(0.3)
        taught.demote(Misbehaviour.DESYNC)
        service._remember([origin], SITE_A)  # a normal window's batch of the same site ends
        kept = json.loads((await cache.learned(SITE_A.partition, [str(origin)]))[str(origin)])
        assert "round_trip" not in kept and kept["state"] == "green", f"the private window's learning kept: {kept}"
    finally:
        await service.aclose()
        await cache.aclose()


async def test_a_firefox_containers_page_connects_to_what_its_own_loads_used_not_the_default_stores() -> None:
    """A container's pages are a partition of their own (Page.cookie_store): a page of the site in a container
    connects ahead to the origins that container's loads used, never to those the site's loads elsewhere did."""
    cache = HttpCache(lambda: MemoryStore(1 << 20), max_entry_bytes=1 << 16)
    service = FetchService(records=lambda page: cache)
    container = Page(top_site=SITE_A.top_site, cookie_store="firefox-container-2")
    try:
        origin = parse_target(URL).origin
        green = record_of(OriginPolicy(16, PipelineState.GREEN, 16), time.time() - 60)
        assert green is not None
        cache.learn(SITE_A.partition, {str(origin): json.dumps(green)})
        assert await service.preconnect_site(container, "tcp") == [], "the default store's origins connected"
        cache.learn(container.partition, {str(origin): json.dumps(green)})
        assert await service.preconnect_site(container, "tcp") == [str(origin)]
    finally:
        await service.aclose()
        await cache.aclose()
