"""One page load as the helper logs it (prefetch/load_log.py): which requests are kept and as what, their waves
(1 + the highest wave delivered before the batch came), idleness on an injected clock, and the load's key
(never for private browsing or without a top-level site)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.fetcher import Page
from lanefetch.prefetch.load_log import IDLE_S, LoadKey, LoadLog, load_key, observe_request

UA = [("User-Agent", "UA/1"), ("Accept", "*/*")]


def test_the_key_is_the_page_without_fragment_and_never_for_private_browsing() -> None:
    page = Page(top_site="https://example.org", url="https://www.example.org/a?b#frag")
    assert load_key(page) == LoadKey("https://example.org", "https://www.example.org/a?b")
    private = Page(top_site="https://example.org", url="https://www.example.org/a", private_browsing=True)
    assert load_key(private) is None
    assert load_key(Page(url="https://www.example.org/a")) is None
    assert load_key(Page(top_site="https://example.org")) is None
    assert load_key(Page(top_site="https://example.org", url="file:///etc/passwd")) is None


def test_what_is_observed_and_as_what() -> None:
    font = observe_request("GET", "https://a.example/f.woff2", UA, "font", 2, 10)
    assert font is not None and (font.destination, font.mode, font.wave, font.size) == ("font", "cors", 2, 10)
    image = observe_request("GET", "https://a.example/i.png", [*UA, ("Cookie", "s=1")], "image", 1, 5)
    assert image is not None and (image.destination, image.mode, image.credentialed) == ("image", "no-cors", True)
    given_fields = observe_request("GET", "https://a.example/s.js",
                                   [("Sec-Fetch-Dest", "script"), ("Sec-Fetch-Mode", "cors")], "other", 1, 1)
    assert given_fields is not None and (given_fields.destination, given_fields.mode) == ("script", "cors")
    with_origin = observe_request("GET", "https://b.example/s.css", [("Origin", "https://a.example")], "stylesheet",
                                  1, 1)
    assert with_origin is not None and with_origin.mode == "cors"
    assert observe_request("POST", "https://a.example/api", UA, "fetch", 1, 1) is None
    for kind in ("document", "ping", "manifest", "preflight", "media", "other", "websocket"):
        assert observe_request("GET", "https://a.example/x", UA, kind, 1, 1) is None, kind
    assert observe_request("GET", "https://a.example/x", [("Sec-Fetch-Dest", "iframe")], "image", 1, 1) is None


def _batch(log: LoadLog, ids: list[str], kind: str = "image", now: float = 0.0) -> int:
    return log.batch([(i, "GET", f"https://a.example/{i}", UA, kind) for i in ids], now)


def test_waves_follow_what_was_delivered_before_each_batch() -> None:
    log = LoadLog(0.0)
    assert log.fresh
    assert log.batch([("doc", "GET", "https://a.example/", UA, "document")], 0.0) == 1
    assert not log.fresh and log.first_request == "doc"
    assert log.requested("https://a.example/") and not log.requested("https://a.example/css")
    log.ended("doc", 100, 0.1)
    assert _batch(log, ["css", "img"], "stylesheet") == 1  # named by the document
    assert _batch(log, ["js"], "script") == 1  # nothing of wave 1 delivered yet: the same wave
    log.ended("css", 10, 0.2)
    assert _batch(log, ["font"], "font") == 2  # found in the stylesheet
    log.failed("img", 0.3)
    log.ended("js", 10, 0.3)
    log.ended("font", 10, 0.4)
    assert [(o.url.rsplit("/", 1)[1], o.wave) for o in log.observed()] == [("css", 1), ("js", 1), ("font", 2)]


def test_a_request_left_to_the_browsers_warm_connection_is_learned_without_a_size() -> None:
    # jinja-templates on `sat`: a script asked after the 388 kB document went to the browser's warm connection in
    # both learning loads, so it was never learned, never flown, and cost the second visit a round trip.
    log = LoadLog(0.0)
    _batch(log, ["doc.js", "broken.js", "css"], "script")
    log.failed("doc.js", 0.1, left_to_browser=True)
    log.failed("broken.js", 0.1)
    log.ended("css", 10, 0.2)
    log.ended("doc.js", 99, 0.3)  # nothing is delivered after the hand-off: a late end changes nothing
    kept = {o.url.rsplit("/", 1)[1]: o.size for o in log.observed()}
    assert kept == {"doc.js": None, "css": 10}
    assert log.is_idle(0.2 + IDLE_S)


def test_what_an_answer_put_on_the_link_is_kept_beside_its_size() -> None:
    # A stylesheet that came as 5.3 kB of gzip for 22.9 kB of CSS: the pool's slow-start rules count the 5.3 kB.
    log = LoadLog(0.0)
    _batch(log, ["css", "img", "hit"], "stylesheet")
    log.transferred("css", 5_303)  # not ended yet: nothing kept
    log.ended("css", 22_880, 0.1)
    log.transferred("css", 5_303)
    log.ended("img", 900, 0.1)
    log.ended("hit", 700, 0.1)
    log.transferred("hit", 0)  # a cache hit put nothing on the link: not known
    kept = {o.url.rsplit("/", 1)[1]: (o.size, o.wire) for o in log.observed()}
    assert kept == {"css": (22_880, 5_303), "img": (900, None), "hit": (700, None)}


@given(st.lists(st.tuples(st.integers(1, 4), st.lists(st.booleans(), max_size=4)), max_size=12))
def test_a_wave_is_one_more_than_the_highest_delivered_when_its_batch_came(
    script: list[tuple[int, list[bool]]],
) -> None:
    """Property: whatever the order of batches and answers, each kept request's wave is 1 + the highest wave
    delivered before its batch arrived (at least 1), and only delivered requests are kept, in order of arrival."""
    log = LoadLog(0.0)
    waves: dict[str, int] = {}
    delivered: list[int] = []
    pending: list[str] = []
    n = 0
    for size, answers in script:
        ids = [f"r{n + i}" for i in range(size)]
        n += size
        wave = _batch(log, ids)
        assert wave == max([*delivered, 0]) + 1
        waves.update((i, wave) for i in ids)
        pending += ids
        for ok in answers:
            if not pending:
                break
            rid = pending.pop(0)
            if ok:
                log.ended(rid, 1, 0.0)
                delivered.append(waves[rid])
            else:
                log.failed(rid, 0.0)
    kept = [(o.url.rsplit("/", 1)[1], o.wave) for o in log.observed()]
    assert [w for _, w in kept] == [waves[i] for i, _ in kept]
    assert len(kept) == len(delivered)
    assert [i for i, _ in kept] == sorted((i for i, _ in kept), key=lambda i: int(i[1:]))


def test_idle_only_without_pending_requests_after_the_quiet_time() -> None:
    log = LoadLog(100.0)
    assert not log.is_idle(100.0 + IDLE_S - 0.1)
    assert log.is_idle(100.0 + IDLE_S)
    _batch(log, ["a"], now=200.0)
    assert not log.is_idle(200.0 + 10 * IDLE_S), "a pending request keeps the load open"
    log.ended("a", 1, 210.0)
    assert not log.is_idle(210.0 + IDLE_S - 0.1)
    assert log.is_idle(210.0 + IDLE_S)
