"""Which TLS session a new connection offers (engine/session_tickets.py): TLS 1.3 tickets once, none expired, the
newest first, a bounded store; by example and by property over any sequence of connections' hand-ins and takes."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from lanefetch.engine.session_tickets import SessionTickets, expired


@dataclass(frozen=True)
class FakeSession:
    id: bytes
    has_ticket: bool = True
    time: int = 1000
    timeout: int = 300


def test_a_tls13_session_is_offered_once_and_never_kept_again() -> None:
    tickets: SessionTickets[FakeSession] = SessionTickets()
    s = FakeSession(b"a")
    tickets.keep(s, 1010, reusable=False)
    assert tickets.take(1010) is s
    assert tickets.take(1010) is None, "a second connection handshakes in full"
    tickets.keep(s, 1020, reusable=False)  # the connection that resumed it hands it back before its new ticket
    assert tickets.take(1020) is None
    tickets.keep(FakeSession(b"b"), 1030, reusable=False)  # ... and then its own new ticket
    assert tickets.take(1030) == FakeSession(b"b")


def test_a_tls12_session_is_offered_again() -> None:
    tickets: SessionTickets[FakeSession] = SessionTickets()
    s = FakeSession(b"a")
    tickets.keep(s, 1010, reusable=True)
    assert tickets.take(1010) is s and tickets.take(1011) is s
    tickets.keep(s, 1012, reusable=True)
    assert len(tickets) == 1


def test_no_ticket_no_id_or_expired_is_not_kept_and_expiry_drops_it() -> None:
    tickets: SessionTickets[FakeSession] = SessionTickets()
    tickets.keep(FakeSession(b"a", has_ticket=False), 1010, reusable=False)  # TLS 1.3 before its tickets came
    tickets.keep(FakeSession(b""), 1010, reusable=True)
    tickets.keep(FakeSession(b"c"), 1300, reusable=False)  # 1000 + 300: its lifetime is over
    assert len(tickets) == 0
    tickets.keep(FakeSession(b"d"), 1010, reusable=True)
    assert tickets.take(1299) == FakeSession(b"d")
    assert tickets.take(1300) is None and len(tickets) == 0


def test_the_newest_is_offered_first_and_the_oldest_go_beyond_capacity() -> None:
    tickets: SessionTickets[FakeSession] = SessionTickets(capacity=2)
    for i, t in enumerate((1003, 1001, 1002)):
        tickets.keep(FakeSession(bytes([i]), time=t), 1005, reusable=False)
    assert len(tickets) == 2
    assert tickets.take(1005) == FakeSession(bytes([0]), time=1003)
    assert tickets.take(1005) == FakeSession(bytes([2]), time=1002)
    assert tickets.take(1005) is None


steps = st.lists(st.one_of(
    st.tuples(st.just("keep"), st.integers(0, 5), st.booleans(), st.integers(990, 1010), st.booleans()),
    st.tuples(st.just("take"), st.integers(0, 400)),
), max_size=40)


@given(steps)
def test_no_tls13_ticket_is_offered_twice_nor_an_expired_one(seq: list[tuple[object, ...]]) -> None:
    tickets: SessionTickets[FakeSession] = SessionTickets(capacity=3)
    tls13_offered: set[bytes] = set()
    now = 1000
    for step in seq:
        if step[0] == "keep":
            _, n, ticket, created, tls12 = step
            assert isinstance(n, int) and isinstance(created, int)
            # One id is one ticket: whether it may be offered again is the protocol's, fixed per id.
            tickets.keep(FakeSession(bytes([n]), bool(ticket), created), now, reusable=n % 2 == 0 and bool(tls12))
        else:
            assert isinstance(step[1], int)
            now += step[1]
            s = tickets.take(now)
            if s is not None:
                assert s.has_ticket and s.id and not expired(s, now)
                if s.id[0] % 2 == 1:  # never reusable
                    assert s.id not in tls13_offered, "a TLS 1.3 ticket offered twice"
                    tls13_offered.add(s.id)
        assert len(tickets) <= 3
