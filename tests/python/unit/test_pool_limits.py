"""The pool never opens more connections to an origin than its limit (pool_plan.connection_limit), a page's
document's render reserve (pool_plan.h2_render_reserve) included."""

from __future__ import annotations

import ssl

from lanefetch.engine import EngineConfig, FetchRequest
from lanefetch.engine.engine import Engine
from lanefetch.engine.exchange import Exchange
from lanefetch.engine.origin_policy import OriginPolicy
from lanefetch.engine.pool import OriginPool
from lanefetch.engine.pool_plan import connection_limit
from lanefetch.engine.request import Origin


class _NoSink:
    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"nothing is delivered here ({name})")


async def test_a_documents_render_reserve_stays_within_one_connection_per_origin() -> None:
    # A lane's engine (lanes/split_fetch.py) and `fetch --connections 1` allow one connection per origin; h2 keeps
    # its default of two where the round trip is long or unknown.
    config = EngineConfig(connections_per_origin=1)
    engine = Engine(config)
    try:
        pool = OriginPool(engine, Origin("https", "127.0.0.1", 9), "loopback", OriginPolicy(16, protocol="h2"),
                          ssl.create_default_context())
        limit = connection_limit(config.connections_per_origin, "h2", True, config.h2_connections)
        assert limit == 1
        request = FetchRequest("doc", "GET", "https://127.0.0.1:9/", resource_type="document")
        pool.submit(Exchange(request, None, _NoSink(), 0, config.max_retries))  # type: ignore[arg-type]
        assert len(pool.connections) <= limit, f"{len(pool.connections)} connections opened, the limit is {limit}"
        await pool.aclose()
    finally:
        await engine.aclose()


async def test_a_documents_render_reserve_after_a_preconnect_opens_no_connection_over_the_limit() -> None:
    # Firefox preconnects a page's origin in full as its navigation starts: a remembered h2 origin whose round trip
    # is not known gets its two connections (pool_plan.connections_ahead). The document that follows opened a third
    # for its render reserve; it adopts one of the two, which carry nothing yet (as h2_reserve_from_opening does
    # where the protocol is not known).
    config = EngineConfig()
    engine = Engine(config)
    try:
        pool = OriginPool(engine, Origin("https", "127.0.0.1", 9), "loopback", OriginPolicy(16, protocol="h2"),
                          ssl.create_default_context())
        limit = connection_limit(config.connections_per_origin, "h2", True, config.h2_connections)
        assert limit == 2
        assert pool.preconnect("full") and len(pool.connections) == limit
        request = FetchRequest("doc", "GET", "https://127.0.0.1:9/", resource_type="document")
        pool.submit(Exchange(request, None, _NoSink(), 0, config.max_retries))  # type: ignore[arg-type]
        assert len(pool.connections) <= limit, f"{len(pool.connections)} connections opened, the limit is {limit}"
        assert pool._render_reserve == max(c.id for c in pool.connections), "the newest one is the reserve"
        await pool.aclose()
    finally:
        await engine.aclose()
