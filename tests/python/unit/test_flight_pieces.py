"""flight_pieces' pure parts: which flight requests are asked in pieces, the ranges they are asked in, and when the
206 answers may be joined into the one 200 the browser gets (and when not: any doubt that they are one version's
bytes in their places)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine import DeliveredHead, FetchRequest
from lanefetch.engine.pool_plan import HEAD_BYTES, INITIAL_SEGMENTS, segments
from lanefetch.prefetch.flight_pieces import (
    FIRST,
    FIRST_ENDS,
    PIECE_BYTES,
    Joined,
    PieceAnswer,
    Refused,
    first_range,
    join,
    piece_ranges,
    piece_request,
    probed,
    rest_ranges,
    splittable,
)

sizes = st.integers(min_value=1, max_value=20 * PIECE_BYTES)


@given(sizes)
def test_pieces_cover_the_body_in_order_each_within_two_flights_as_few_as_that_allows(size: int) -> None:
    ranges = piece_ranges(size)
    if size <= PIECE_BYTES:
        assert ranges == []
        return
    assert len(ranges) >= 2 and ranges[0][0] == 0 and ranges[-1][1] is None
    ends = [last if last is not None else size - 1 for _, last in ranges]
    for (first, _), end, (following, _) in zip(ranges, ends, [*ranges[1:], (size, None)], strict=True):
        assert following == end + 1 and 0 < end - first + 1 <= PIECE_BYTES
    assert (len(ranges) - 1) * PIECE_BYTES < size  # one piece fewer could not hold it


def _request(url: str, kind: str, size: int | None, headers: list[tuple[str, str]] | None = None,
             method: str = "GET") -> FetchRequest:
    return FetchRequest("r1", method, url, headers or [("Accept", "image/*")], resource_type=kind,
                        expected_size=size)


def test_what_is_split_large_images_but_svg_and_woff_fonts_as_they_are() -> None:
    big = PIECE_BYTES + 1
    assert splittable(_request("http://a.example/p/photo.png", "image", big))
    assert splittable(_request("http://a.example/p/photo.JPG?v=2#x", "image", big))
    assert not splittable(_request("http://a.example/p/photo.png", "image", PIECE_BYTES))  # one piece does
    assert not splittable(_request("http://a.example/p/photo.png", "image", None))  # size unknown
    assert not splittable(_request("http://a.example/p/logo.svg", "image", big))  # servers compress SVG
    assert splittable(_request("http://a.example/f/font.woff2", "font", big))
    assert splittable(_request("http://a.example/f/font.woff", "font", big))
    assert not splittable(_request("http://a.example/f/font.ttf", "font", big))  # compressed by servers
    assert not splittable(_request("http://a.example/s/app.js", "script", big))
    assert not splittable(_request("http://a.example/p/photo.png", "image", big, method="HEAD"))
    for own in (("Range", "bytes=0-9"), ("If-Range", '"x"'), ("If-None-Match", '"x"')):
        assert not splittable(_request("http://a.example/p/photo.png", "image", big, [own]))
    stale = dataclasses.replace(_request("http://a.example/p/photo.png", "image", big), cache_refresh=True)
    assert not splittable(stale)  # the helper's cache holds it stale: revalidated whole (a 304), never in ranges


def test_an_image_or_font_of_unknown_size_is_probed_in_a_first_piece_on_the_same_terms() -> None:
    assert probed(_request("http://a.example/p/photo.png", "image", None))
    assert probed(_request("http://a.example/f/font.woff2", "font", None))
    assert not probed(_request("http://a.example/p/photo.png", "image", 10))  # known: split by its size, or not
    assert not probed(_request("http://a.example/p/logo.svg", "image", None))
    assert not probed(_request("http://a.example/f/font.ttf", "font", None))
    assert not probed(_request("http://a.example/s/app.js", "script", None))
    assert not probed(_request("http://a.example/p/photo.png", "image", None, method="HEAD"))
    assert not probed(_request("http://a.example/p/photo.png", "image", None, [("Range", "bytes=0-9")]))
    stale = dataclasses.replace(_request("http://a.example/p/photo.png", "image", None), cache_refresh=True)
    assert not probed(stale)
    assert FIRST == (0, PIECE_BYTES - 1)


@given(st.integers(min_value=0, max_value=HEAD_BYTES))
def test_a_piece_with_its_head_comes_in_a_fresh_connections_first_two_flights(head: int) -> None:
    # 10 segments, then 20 (slow start), of 1448 bytes each: a byte more is a third flight, a round trip more
    assert segments([PIECE_BYTES + head]) <= 3 * INITIAL_SEGMENTS
    assert segments([PIECE_BYTES + HEAD_BYTES + 1]) > 3 * INITIAL_SEGMENTS, "and no smaller than that allows"


def test_first_pieces_under_way_together_ask_ranges_of_their_own_within_the_piece_size() -> None:
    ranges = [first_range(k) for k in range(FIRST_ENDS)]
    assert ranges[0] == FIRST and len(set(ranges)) == FIRST_ENDS
    assert all(first == 0 and last is not None and PIECE_BYTES - FIRST_ENDS <= last < PIECE_BYTES
               for first, last in ranges)
    assert first_range(FIRST_ENDS) == FIRST  # (modulo FIRST_ENDS)


@given(sizes, st.integers(min_value=0, max_value=FIRST_ENDS - 1))
def test_the_rest_follows_the_first_piece_that_was_asked(total: int, k: int) -> None:
    _, last = first_range(k)
    assert last is not None
    rest = rest_ranges(total, last + 1)
    if total <= last + 1:
        assert rest == []
        return
    body = bytes(i % 251 for i in range(total))
    asked = [first_range(k), *rest]
    joined = join(asked, [_answer(f, total - 1 if end is None else end, body) for f, end in asked])
    assert isinstance(joined, Joined) and joined.body == body


@given(sizes)
def test_the_rest_after_a_first_piece_covers_the_body_in_pieces_within_two_flights(total: int) -> None:
    rest = rest_ranges(total)
    if total <= PIECE_BYTES:
        assert rest == [], "the first piece carried it all"
        return
    assert rest[0][0] == FIRST[1] + 1 and rest[-1][1] is None
    ends = [last if last is not None else total - 1 for _, last in rest]
    for (first, _), end, (following, _) in zip(rest, ends, [*rest[1:], (total, None)], strict=True):
        assert following == end + 1 and 0 < end - first + 1 <= PIECE_BYTES
    assert (len(rest) - 1) * PIECE_BYTES < total - PIECE_BYTES  # one piece fewer could not hold it
    # with its first piece, the whole body joins
    body = bytes(i % 251 for i in range(total))
    asked = [FIRST, *rest]
    joined = join(asked, [_answer(f, total - 1 if last is None else last, body) for f, last in asked])
    assert isinstance(joined, Joined) and joined.body == body


@given(st.integers(min_value=1, max_value=PIECE_BYTES))
def test_a_first_piece_that_holds_the_whole_body_needs_no_validator(size: int) -> None:
    body = bytes(i % 7 for i in range(size))
    alone = PieceAnswer(DeliveredHead(206, "Partial Content", "1.1", [
        ("Content-Range", f"bytes 0-{size - 1}/{size}"), ("Content-Length", str(size))], False), body)
    joined = join([(0, None)], [alone])
    assert isinstance(joined, Joined) and joined.body == body and joined.head.status == 200
    assert isinstance(join([(0, None)], [PieceAnswer(alone.head, body[:-1])]), Refused)  # short: never


def test_a_piece_asks_its_range_in_identity_and_keeps_the_requests_other_fields() -> None:
    request = _request("http://a.example/p/photo.png", "image", 100_000,
                       [("Accept", "image/*"), ("Accept-Encoding", "gzip, deflate"), ("User-Agent", "UA")])
    last = piece_request(request, 2, (60_000, None))
    assert last.id == "r1~piece2" and not last.cache_store and last.expected_size == 40_000
    assert last.headers == [("Accept", "image/*"), ("User-Agent", "UA"), ("Accept-Encoding", "identity"),
                            ("Range", "bytes=60000-")]
    first = piece_request(request, 0, (0, 29_999))
    assert ("Range", "bytes=0-29999") in first.headers and first.expected_size == 30_000


def _answer(first: int, last: int, body: bytes, etag: str = '"v1"', status: int = 206,
            extra: list[tuple[str, str]] | None = None) -> PieceAnswer:
    headers = [("Content-Type", "image/png"), ("ETag", etag), ("Content-Length", str(last - first + 1)),
               ("Content-Range", f"bytes {first}-{last}/{len(body)}"), *(extra or [])]
    return PieceAnswer(DeliveredHead(status, "Partial Content", "1.1", headers, False), body[first : last + 1])


def _answers(body: bytes) -> tuple[list[tuple[int, int | None]], list[PieceAnswer]]:
    asked = piece_ranges(len(body))
    return asked, [_answer(f, len(body) - 1 if last is None else last, body) for f, last in asked]


bodies = st.integers(min_value=PIECE_BYTES + 1, max_value=4 * PIECE_BYTES).map(
    lambda n: bytes((i * 31 + n) % 256 for i in range(n)))


@given(bodies, st.data())
def test_pieces_of_one_version_join_into_the_body_as_a_200(body: bytes, data: st.DataObject) -> None:
    asked, answers = _answers(body)
    joined = join(asked, answers)
    assert isinstance(joined, Joined) and joined.body == body
    assert joined.head.status == 200
    fields = {k.lower(): v for k, v in joined.head.headers}
    assert fields["content-length"] == str(len(body)) and "content-range" not in fields
    assert fields["etag"] == '"v1"'
    # the body grew after it was learned: the open-ended last piece brings the rest
    grown = body + bytes(data.draw(st.integers(min_value=1, max_value=PIECE_BYTES)))
    last_first = asked[-1][0]
    grown_answers = [_answer(f, last, grown) for f, last in asked[:-1] if last is not None]
    grown_answers.append(_answer(last_first, len(grown) - 1, grown))
    joined = join(asked, grown_answers)
    assert isinstance(joined, Joined) and joined.body == grown


@given(bodies, st.data())
def test_a_whole_joined_from_an_unproven_piece_is_unproven(body: bytes, data: st.DataObject) -> None:
    # A piece let through before its place on a pipelined connection was proven: the whole is never cached either.
    asked, answers = _answers(body)
    k = data.draw(st.integers(min_value=0, max_value=len(answers) - 1))
    answers[k] = dataclasses.replace(answers[k], head=dataclasses.replace(answers[k].head, unproven=True))
    joined = join(asked, answers)
    assert isinstance(joined, Joined) and joined.head.unproven and joined.head.status == 200


@given(bodies, st.data())
def test_pieces_are_never_joined_on_any_doubt(body: bytes, data: st.DataObject) -> None:
    asked, answers = _answers(body)
    k = data.draw(st.integers(min_value=0, max_value=len(answers) - 1))
    a = answers[k]
    first = asked[k][0]
    end = first + len(a.body) - 1

    def spoil(how: str) -> PieceAnswer:
        if how == "version":
            return _answer(first, end, body, etag='"v2"')
        if how == "weak":
            return _answer(first, end, body, etag='W/"v1"')
        if how == "status":
            return dataclasses.replace(a, head=dataclasses.replace(a.head, status=200))
        if how == "coded":
            return _answer(first, end, body, extra=[("Content-Encoding", "gzip")])
        if how == "elsewhere":  # a range other than the one asked for
            return _answer(first + 1, end, body)
        if how == "short":  # a body shorter than its range
            return PieceAnswer(a.head, a.body[:-1])
        if how == "total":  # another length of the whole
            return PieceAnswer(dataclasses.replace(a.head, headers=[
                *a.head.headers[:3], ("Content-Range", f"bytes {first}-{end}/{len(body) + 7}")]), a.body)
        assert how == "no-range"
        return PieceAnswer(dataclasses.replace(a.head, headers=a.head.headers[:3]), a.body)

    how = data.draw(st.sampled_from(["version", "weak", "status", "coded", "elsewhere", "short", "total",
                                     "no-range"]))
    if how == "weak" and k == 0:
        spoiled = [_answer(f, len(body) - 1 if la is None else la, body, etag='W/"v1"') for f, la in asked]
    else:
        spoiled = [*answers[:k], spoil(how), *answers[k + 1:]]
    assert isinstance(join(asked, spoiled), Refused), how
    assert isinstance(join(asked, answers[:-1]), Refused)  # a piece missing
