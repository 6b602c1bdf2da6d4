"""Whose turn it is for room under the helper's cap on connections: cap_turns.Line on its own, and the real
ConnectionCap (connection_cap.py, no I/O in it) driven by model pools through any sequence of work coming, answers
finishing, connections closing and preconnects: never above the cap, never a busy or still-wanted connection closed
for room, no waiting origin passed over by the same other origin twice (so fewer times than there are other
origins), and all work served once the answers come in."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import example, given, settings
from hypothesis import strategies as st
from lanefetch.engine.cap_turns import Line
from lanefetch.engine.connection_cap import ConnectionCap
from lanefetch.engine.pool_plan import Evictable, connections_to_open


@given(st.lists(st.tuples(st.sampled_from(["join", "leave", "served", "served-more"]), st.integers(0, 5)),
                max_size=40))
def test_the_line_holds_each_once_in_the_order_they_began_waiting(ops: list[tuple[str, int]]) -> None:
    line: Line[int] = Line()
    expected: list[int] = []  # the same line, kept as a plain list
    for op, key in ops:
        if op == "join":
            line = line.join(key)
            if key not in expected:
                expected.append(key)  # at the back; one already waiting keeps its place
        elif op == "leave":
            line = line.leave(key)
            expected = [k for k in expected if k != key]
        else:
            line = line.served(key, op == "served-more")
            expected = [k for k in expected if k != key] + ([key] if op == "served-more" else [])
        assert list(line.waiting) == expected
        assert len(set(line.waiting)) == len(line)
        assert line.next_in_line() == (expected[0] if expected else None)
        assert line.next_in_line(but=key) == next((k for k in expected if k != key), None), "the freer passed over"


def test_a_waiter_served_goes_behind_those_it_waited_with() -> None:
    line = Line[str]().join("busy").join("quiet").join("late")
    assert line.next_in_line() == "busy"
    line = line.served("busy", wants_more=True)
    assert line.waiting == ("quiet", "late", "busy"), "the busy origin's next connection waits behind the others"
    assert line.next_in_line(but="quiet") == "late", "room freed by quiet's own connection is not quiet's"
    assert line.join("quiet").waiting == line.waiting, "asking again keeps one's place"


@dataclass(eq=False)
class _Pool:
    """A model OriginPool as the cap sees it (connection_cap.CapMember): `work` requests queued, connections idle or
    busy with one answer, at most `limit` wanted."""

    name: int
    cap: ConnectionCap
    opened: list[tuple[int, frozenset[int]]]  # every pool's opens, in order: who, and who was in line then
    limit: int = 3
    work: int = 0
    conns: dict[int, bool] = field(default_factory=dict)  # id -> busy
    last: dict[int, float] = field(default_factory=dict)
    evicted_wrongly: list[int] = field(default_factory=list)

    def wanted(self) -> int:
        return connections_to_open(len(self.conns), self.work + sum(self.conns.values()), self.limit) \
            if self.work else 0

    def take_turn(self) -> bool:
        if self.wanted() <= 0:
            return False
        self.open()
        return True

    def evictable(self) -> list[Evictable]:
        return [] if self.work else [Evictable(i, self.last[i]) for i, busy in self.conns.items() if not busy]

    def evict(self, conn_id: int) -> None:
        if self.conns[conn_id] or self.work:
            self.evicted_wrongly.append(conn_id)
        del self.conns[conn_id]

    def open(self) -> None:
        conn_id = self.cap.next_id()
        self.conns[conn_id] = False
        self.last[conn_id] = 0.0
        self.cap.counted(self, conn_id)
        self.opened.append((self.name, frozenset(p.name for p in self.cap.waiting())))  # type: ignore[attr-defined]

    def ask(self) -> None:
        """The pool plans (pool.py _open_for_work): asks for what its work calls for, opens what it is given."""
        for _ in range(self.cap.admit(self, self.wanted()) if self.wanted() else 0):
            self.open()


_OPS = st.lists(st.tuples(st.sampled_from(["work", "work", "finish", "close", "preconnect"]), st.integers(0, 3),
                          st.integers(1, 5)), max_size=80)


@settings(max_examples=400)
@given(st.integers(1, 4), _OPS)
@example(1, [("work", 0, 2), ("close", 0, 2), ("work", 1, 1)])  # room its own loss freed: the newcomer waits behind
def test_waiting_origins_take_turns_under_the_cap_and_all_work_is_served(cap_size: int,
                                                                       ops: list[tuple[str, int, int]]) -> None:
    cap = ConnectionCap(cap_size)
    opened: list[tuple[int, frozenset[int]]] = []
    pools = [_Pool(i, cap, opened) for i in range(4)]
    # For each origin in line: the other origins served since it began waiting for its next connection, and how many
    # of its own connections closed meanwhile (room it freed itself is not handed to it: cap_turns, "not one's own").
    passed_by: dict[int, list[int]] = {p.name: [] for p in pools}
    losses: dict[int, int] = {p.name: 0 for p in pools}
    t = 0.0
    later: list[_Pool] = []  # pools that plan again at the next event

    def out_of_line() -> None:
        waiting = {p.name for p in cap.waiting()}  # type: ignore[attr-defined]
        for name in passed_by:
            if name not in waiting:
                passed_by[name], losses[name] = [], 0

    def check_turns(new_opens: list[tuple[int, frozenset[int]]]) -> None:
        """Each open, in order, against the line as it stood then: nobody jumps the line, and no other origin passes a
        waiting one twice, but for room the waiting one's own closing connections freed (at most its connections)."""
        for who, waiting in new_opens:
            assert who in waiting or not waiting, f"origin {who} jumped the line {sorted(waiting)}"
            for name, others in passed_by.items():
                if name not in waiting:
                    others.clear()  # not waiting: its next wait starts afresh
                    losses[name] = 0
                elif name != who:
                    assert others.count(who) <= losses[name], \
                        f"origin {name} passed over by {who} again while waiting: {others}, {losses[name]} lost"
                    others.append(who)
            passed_by[who], losses[who] = [], 0
        out_of_line()
        for name, others in passed_by.items():
            assert len(others) <= (len(pools) - 1) * (1 + losses[name]) and losses[name] <= pools[name].limit

    def settle() -> None:
        """Every idle connection takes a queued request of its origin (the pool's take)."""
        for p in pools:
            for i, busy in p.conns.items():
                if not busy and p.work:
                    p.work -= 1
                    p.conns[i] = True
                    p.last[i] = t

    for op, who, n in ops:
        t += 1
        pool = pools[who]
        out_of_line()
        before = len(opened)
        if op == "work":
            pool.work += n
            pool.ask()
        elif op == "finish":  # an answer is in: the connection is idle, and room may have come (request_finished)
            busy = [i for i, b in pool.conns.items() if b]
            if busy:
                pool.conns[busy[0]] = False
                pool.last[busy[0]] = t
            settle()
            cap.serve()
            while later:
                later.pop().ask()
        elif op == "close" and pool.conns:  # the server closes one (a busy one's request is asked again)
            conn_id = next(iter(pool.conns))
            pool.work += pool.conns.pop(conn_id)
            if pool in cap.waiting():
                losses[pool.name] += 1
            cap.released(pool, conn_id)
            if n % 2:
                pool.ask()  # its own plan after the loss (connection_closed)
            else:
                later.append(pool)  # or at the next answer (a failed connect beside others: when they answer)
        elif op == "preconnect" and not pool.conns and cap.admit(pool, 1, wait=False, evict=False):
            pool.open()
        check_turns(opened[before:])
        settle()
        assert cap.count == sum(len(p.conns) for p in pools) <= cap_size
        assert not any(p.evicted_wrongly for p in pools), "a busy or still-wanted connection closed for room"

    # Afterwards every answer comes in, one at a time: all the queued work is served, none waits for good.
    before = len(opened)
    while later:
        later.pop().ask()
    check_turns(opened[before:])
    settle()
    for _ in range(20 * (sum(p.work for p in pools) + cap_size + 1)):
        busy = next(((p, i) for p in pools for i, b in p.conns.items() if b), None)
        if busy is None:
            break
        t += 1
        busy[0].conns[busy[1]] = False
        busy[0].last[busy[1]] = t
        before = len(opened)
        settle()
        cap.serve()
        check_turns(opened[before:])
        settle()
        assert cap.count <= cap_size and not any(p.evicted_wrongly for p in pools)
    assert not any(p.work for p in pools), f"work left waiting: {[(p.name, p.work, p.conns) for p in pools]}"
    assert not cap.waiting()


def test_a_busy_origin_planning_often_does_not_take_the_room_of_one_waiting_longer() -> None:
    """The starvation the line ends: at the cap, a busy origin asking again at each answer took every freed
    connection before a waiting one was woken to ask."""
    cap = ConnectionCap(2)
    opened: list[tuple[int, frozenset[int]]] = []
    busy, quiet = _Pool(0, cap, opened), _Pool(1, cap, opened)
    busy.work = 10
    busy.ask()  # takes both connections; wants a third
    quiet.work = 1
    quiet.ask()  # at the cap: waits
    assert [p.name for p in cap.waiting()] == [0, 1]  # type: ignore[attr-defined]
    conn_id = next(iter(busy.conns))
    del busy.conns[conn_id]
    cap.released(busy, conn_id)  # room: not the busy origin's own (it freed it), so the quiet one's
    busy.ask()  # and the busy origin asking again at once gets none
    assert opened[-1][0] == 1 and len(quiet.conns) == 1 and len(busy.conns) == 1
    assert [p.name for p in cap.waiting()] == [0]  # type: ignore[attr-defined]


def test_room_freed_by_the_only_waiter_is_still_its_own_before_a_newcomers() -> None:
    """The waiter's own connection closed: the line does not hand it that room at once (its own plan decides), but
    an origin asking meanwhile joins the line behind it rather than taking the room."""
    cap = ConnectionCap(1)
    opened: list[tuple[int, frozenset[int]]] = []
    busy, newcomer = _Pool(0, cap, opened), _Pool(1, cap, opened)
    busy.work = 4
    busy.ask()
    assert [p.name for p in cap.waiting()] == [0]  # type: ignore[attr-defined]
    conn_id = next(iter(busy.conns))
    busy.work += 1
    del busy.conns[conn_id]
    cap.released(busy, conn_id)
    assert cap.count == 0, "its own loss: not handed back to it by the line"
    newcomer.work = 1
    newcomer.ask()
    assert len(busy.conns) == 1 and not newcomer.conns, "the newcomer jumped the line"
    assert [p.name for p in cap.waiting()] == [1, 0]  # type: ignore[attr-defined]


def test_a_pool_that_closes_gives_back_all_its_room() -> None:
    cap = ConnectionCap(2)
    opened: list[tuple[int, frozenset[int]]] = []
    gone, waiter = _Pool(0, cap, opened), _Pool(1, cap, opened)
    gone.work = 5
    gone.ask()
    waiter.work = 1
    waiter.ask()
    assert cap.count == 2 and not waiter.conns
    gone.work, gone.conns = 0, {}  # closed: its connections' tasks were cancelled while connecting, none reported
    cap.forget(gone)
    assert len(waiter.conns) == 1 and cap.count == 1 and not cap.waiting()
