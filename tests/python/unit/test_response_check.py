"""Which heads cannot answer which requests (response_check.py), and when a broken body may be finished from
another response (resume.py): pure rules, table-driven."""

from __future__ import annotations

import pytest
from lanefetch.engine.response_check import (
    Expectation,
    answers_alike,
    implausible,
    may_prove_by_exclusion,
    proves_by_exclusion,
)
from lanefetch.engine.response_parser import ResponseHead
from lanefetch.engine.resume import continues, replaces, resume_headers, strong_validator


def head(status: int = 200, **fields: str) -> ResponseHead:
    return ResponseHead(status, "X", "1.1", [(k.replace("_", "-"), v) for k, v in fields.items()])


@pytest.mark.parametrize(("resp", "expect", "bad"), [
    (head(200, content_type="image/png"), Expectation("GET", destination="image"), False),
    (head(200, content_type="text/css"), Expectation("GET", destination="image"), True),
    (head(200, content_type="text/javascript; charset=utf-8"), Expectation("GET", destination="stylesheet"), True),
    (head(200, content_type="image/webp"), Expectation("GET", destination="script"), True),
    (head(200, content_type="font/woff2"), Expectation("GET", destination="font"), False),
    (head(200, content_type="text/css"), Expectation("GET", destination="font"), True),
    # generic types real servers send for anything: never a finding
    (head(200, content_type="text/html"), Expectation("GET", destination="image"), False),
    (head(200, content_type="application/octet-stream"), Expectation("GET", destination="stylesheet"), False),
    (head(200, content_type="text/plain"), Expectation("GET", destination="script"), False),
    (head(200), Expectation("GET", destination="image"), False),
    # an error page may be anything
    (head(404, content_type="text/css"), Expectation("GET", destination="image"), False),
    # destinations without a rule
    (head(200, content_type="image/png"), Expectation("GET", destination="fetch"), False),
    # ranges and conditions
    (head(206, content_range="bytes 0-9/100"), Expectation("GET"), True),
    (head(206, content_range="bytes 0-9/100"), Expectation("GET", ranged=True), False),
    (head(416), Expectation("GET"), True),
    (head(200, content_range="bytes 0-9/100"), Expectation("GET"), True),
    (head(304), Expectation("GET"), True),
    (head(304), Expectation("GET", conditional=True), False),
])
def test_implausible(resp: ResponseHead, expect: Expectation, bad: bool) -> None:
    assert (implausible(resp, expect) is not None) is bad


@pytest.mark.parametrize(("if_none_match", "etag", "bad"), [
    ('"a"', '"a"', False),
    ('W/"a", "b"', '"a"', False),  # compared weakly: nginx names "a" in the 304 of the W/"a" it compressed
    ('"a"', 'W/"a"', False),
    ('"a", "b"', '"c"', True),  # another version than any listed: not this request's answer
    ('"a"', None, False),  # a 304 naming none
    ("*", '"c"', False),  # any version
    ("a-unquoted", '"c"', False),  # a list that does not parse says nothing
])
def test_a_304_names_a_version_its_request_listed(if_none_match: str, etag: str | None, bad: bool) -> None:
    expect = Expectation.of("GET", [("If-None-Match", if_none_match)], "image")
    resp = head(304) if etag is None else head(304, etag=etag)
    assert (implausible(resp, expect) is not None) is bad


def test_expectation_of_request_fields() -> None:
    e = Expectation.of("get", [("Range", "bytes=0-"), ("If-None-Match", '"x"')], "image")
    assert e == Expectation("GET", True, True, "image", (0, None), frozenset({'"x"'}))


@pytest.mark.parametrize(("resp", "validator"), [
    (head(200, etag='"abc"'), '"abc"'),
    (head(200, etag='W/"abc"'), None),  # weak: no If-Range at all
    (head(200, etag='W/"abc"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT",
          date="Tue, 02 Jan 2024 00:00:00 GMT"), None),  # a date only when there is no entity tag
    (head(200, last_modified="Mon, 01 Jan 2024 00:00:00 GMT", date="Mon, 01 Jan 2024 00:00:01 GMT"),
     "Mon, 01 Jan 2024 00:00:00 GMT"),
    (head(200, last_modified="Mon, 01 Jan 2024 00:00:00 GMT", date="Mon, 01 Jan 2024 00:00:00 GMT"), None),
    (head(200, last_modified="Mon, 01 Jan 2024 00:00:00 GMT"), None),  # no Date to judge it by
    (head(200, last_modified="garbage", date="Mon, 01 Jan 2024 00:00:00 GMT"), None),
    (head(200, content_length="100"), None),  # a length is no validator
])
def test_strong_validator(resp: ResponseHead, validator: str | None) -> None:
    assert strong_validator(resp) == validator


def test_resume_headers() -> None:
    first = head(200, etag='"v1"', content_length="100")
    assert resume_headers([("Accept", "*/*"), ("If-None-Match", '"old"')], first, 40) == [
        ("Accept", "*/*"), ("Range", "bytes=40-"), ("If-Range", '"v1"')]
    assert resume_headers([], head(200, content_length="100"), 40) is None
    assert resume_headers([("Range", "bytes=0-9")], first, 5) is None  # the page's own range
    assert resume_headers([], first, 0) is None
    assert resume_headers([], head(206, etag='"v1"'), 5) is None


def test_continues() -> None:
    first = head(200, etag='"v1"', content_length="100")
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-99/100"), 40) is None
    assert continues(first, head(206, etag='"v2"', content_range="bytes 40-99/100"), 40) is not None
    assert continues(first, head(206, etag='"v1"', content_range="bytes 41-99/100"), 40) is not None
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-98/100"), 40) is not None
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-99/120"), 40) is not None
    assert continues(first, head(200, etag='"v1"', content_length="100"), 40) is not None


def test_continues_a_first_answer_with_its_content_length_repeated() -> None:
    """Content-Length twice with one value (RFC 9110 §8.6 lets a recipient take it; the parser does): the 206's range
    is judged by that value, not by the joined field "100, 100" (int() of which raised)."""
    first = ResponseHead(200, "OK", "1.1", [("ETag", '"v1"'), ("Content-Length", "100"), ("Content-Length", "100")])
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-99/100"), 40) is None
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-99/*"), 40) is None
    assert continues(first, head(206, etag='"v1"', content_range="bytes 40-98/*"), 40) is not None


def test_replaces() -> None:
    first = head(200, etag='"v1"', content_length="100")
    assert replaces(first, head(200, etag='"v1"', content_length="100"), 40)
    assert not replaces(first, head(200, etag='"v2"', content_length="100"), 40)
    bare = head(200, content_length="100")
    assert not replaces(bare, head(200, content_length="100"), 40), "same length is no proof of the same body"
    assert replaces(bare, head(200, content_length="100"), 0), "nothing delivered: nothing spliced"
    assert not replaces(bare, head(200, content_length="101"), 0)


@pytest.mark.parametrize(("rng", "content_range", "status", "proven"), [
    ("bytes=0-65535", "bytes 0-65535/300000", 206, True),
    ("bytes=65536-", "bytes 65536-299999/300000", 206, True),
    ("bytes=65536-", "bytes 65536-299999/*", 206, False),  # open-ended with an unknown total: no end to check
    ("bytes=0-999999", "bytes 0-299999/300000", 206, True),  # asked past the end: the server stops at it
    ("bytes=0-65535", "bytes 65536-131071/300000", 206, False),  # another range: another request's answer
    ("bytes=0-65535", "bytes 0-65535/300000", 200, False),
    ("bytes=0-1,5-9", "bytes 0-1/300000", 206, False),  # several ranges: not one to match
])
def test_a_range_answer_proves_its_own_place(rng: str, content_range: str, status: int, proven: bool) -> None:
    from lanefetch.engine.response_check import proves_itself

    expect = Expectation.of("GET", [("Range", rng)], "other")
    assert proves_itself(head(status, content_range=content_range), expect) is proven


@pytest.mark.parametrize(("asked", "answer", "other", "alike"), [
    ((0, 43287), "bytes 0-43287/90000", (0, 43287), True),  # its own range
    ((0, 43287), "bytes 0-43287/90000", (0, 43286), False),  # the other range's answer ends a byte sooner
    ((0, 43287), "bytes 0-799/800", (0, 43286), True),  # the body ends inside both: answered alike
    ((0, 43287), "bytes 0-799/800", (0, 500), False),  # ... not inside the other's: its answer is 0-500/800
    ((0, 43287), "bytes 0-799/800", (0, None), True),  # open-ended from the same byte
    ((0, 43287), "bytes 0-799/800", (800, None), False),  # another first byte
    ((0, 43286), "bytes 0-43286/43287", (0, 43287), True),  # ends exactly at the body's end: the longer asks alike
])
def test_which_other_range_would_get_the_same_answer(asked: tuple[int, int | None], answer: str,
                                                      other: tuple[int, int | None], alike: bool) -> None:
    head = ResponseHead(206, "Partial Content", "1.1", [("Content-Range", answer)])
    expect = Expectation.of("GET", [("Range", f"bytes={asked[0]}-{asked[1]}")], "image")
    assert answers_alike(head, expect, other) is alike


_CSS = Expectation("GET", destination="stylesheet")


@pytest.mark.parametrize(("others", "proven"), [
    ([Expectation("GET", destination="font")], True),
    # a first piece of an image, or a revalidation: a 200 is still the only answer with a body they could take
    ([Expectation("GET", ranged=True, destination="image", byte_range=(0, 99))], True),
    ([Expectation("GET", conditional=True, destination="image")], True),
    ([Expectation("HEAD", destination="image")], False),  # not a GET: proves nothing
    ([Expectation("GET", ranged=True, destination="other")], False),  # a fetch takes any media type
    ([Expectation("GET", destination="stylesheet")], False),  # another stylesheet could take it
    ([None], False),  # not known
    ([], True),
])
def test_a_stylesheets_answer_proves_its_place_where_no_other_request_takes_its_type(
        others: list[Expectation | None], proven: bool) -> None:
    assert proves_by_exclusion(head(200, content_type="text/css"), _CSS, others) is proven


@pytest.mark.parametrize(("expect", "may"), [
    (_CSS, True),
    (Expectation("GET", destination="script"), True),
    (Expectation("GET", conditional=True, destination="stylesheet"), False),  # a 304 has no type to exclude by
    (Expectation("GET", ranged=True, destination="script"), False),
    (Expectation("HEAD", destination="stylesheet"), False),
    (Expectation("GET", destination="fetch"), False),
])
def test_which_answers_may_prove_their_place_by_exclusion(expect: Expectation, may: bool) -> None:
    assert may_prove_by_exclusion(expect) is may
    if not may:
        assert not proves_by_exclusion(head(200, content_type="text/css"), expect, [])
