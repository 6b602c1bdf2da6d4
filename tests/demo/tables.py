"""The demo's tables and summary: OFF vs ON and a few lines on what lanefetch did (the terminal), and what it did
with each request (a file in the output directory).

"Pipelined" is counted twice, from each end, and the two counts differ for a reason: lanefetch counts a request as
sent pipelined when another was still unanswered on its connection as it left (its pipeline depth above 1); nginx
marks one pipelined ($pipe) only when it was already in nginx's read buffer as nginx finished the request before it.
A pipelined request that was still on the (slow) uplink at that moment is pipelined for lanefetch, not for nginx, so
nginx's count is at most lanefetch's."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bench import report

from demo.load import Load


def speedup(off_s: float, on_s: float) -> str:
    """"1.16× faster", or "1.03× slower" when ON took longer (never "0.97× faster")."""
    ratio = off_s / on_s
    return f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"


def sent_pipelined(page: dict[str, Any]) -> int:
    """Requests the helper sent while another was unanswered on their connection (pipeline depth above 1)."""
    return sum(1 for r in page["records"]
               if ((r["timing"] or {}).get("connection") or {}).get("pipeline_depth", 0) > 1)


def from_flight(page: dict[str, Any]) -> int:
    """Requests answered from the helper's prefetch flight (fetched before the browser asked, each on its own
    connection and place in a pipeline, which the page's timing records do not show)."""
    return sum(1 for r in page["records"] if (r["timing"] or {}).get("cache") == "prefetch")


def comparison(off: Load, on: Load) -> list[str]:
    rows = [
        ["page load time (navigation → load event)", f"{off.page['load_s']:.2f} s", f"{on.page['load_s']:.2f} s",
         speedup(off.page["load_s"], on.page["load_s"])],
        ["files the page loaded", off.page["resources"], on.page["resources"], ""],
        ["requests the server answered", off.requests, on.requests, ""],
        ["connections they came on", off.connections, on.connections, ""],
        ["requests sent pipelined (another unanswered on the connection)", sent_pipelined(off.page),
         sent_pipelined(on.page), ""],
        ["requests answered from the helper's prefetch flight", from_flight(off.page), from_flight(on.page), ""],
        ["requests nginx had in its buffer when it finished the one before (both kinds)", off.pipelined,
         on.pipelined, ""],
        ["kB over the link up / down", f"{off.up_bytes / 1000:.1f} / {off.down_bytes / 1000:.1f}",
         f"{on.up_bytes / 1000:.1f} / {on.down_bytes / 1000:.1f}", ""],
        ["packets the link's queue dropped", off.drops, on.drops, ""],
    ]
    return report.table(["", "lanefetch OFF", "lanefetch ON", ""], rows)


def summary(on: Load) -> list[str]:
    """A few lines on what lanefetch did with the ON load."""
    records: list[dict[str, Any]] = on.page["records"]
    helper = [r for r in records if r["timing"] is not None]
    left = len(records) - len(helper)
    depth = max((((r["timing"] or {}).get("connection") or {}).get("pipeline_depth", 0) for r in helper), default=0)
    lines = [f"With lanefetch ON the helper fetched {len(helper)} of the {len(records)} requests "
             f"({left} left to the browser) on {on.connections} connection{'s' * (on.connections != 1)}; "
             f"{sent_pipelined(on.page)} went out pipelined, up to {depth} in flight on one connection; "
             f"{from_flight(on.page)} were answered from its prefetch flight."]
    return lines


def _ms(t: float | None, origin: float) -> str:
    return "" if t is None else f"{t - origin:.0f}"


def requests(page: dict[str, Any]) -> list[str]:
    """One row per request lanefetch saw, in the order the helper queued them; times in ms after the navigation."""
    origin = float(page["time_origin"])
    rows = []
    records: list[dict[str, Any]] = page["records"]
    for r in sorted(records, key=lambda r: (r["timing"] or {}).get("timing", {}).get("queued", r["pausedAt"])):
        name = urlsplit(r["url"]).path or "/"
        timing = r["timing"]
        if timing is None:  # the browser fetched it itself: its own timing, when it reported it
            b = r.get("browser") or {}
            connect = (f"{_ms(b['connectStart'], origin)}–{_ms(b['connectEnd'], origin)}"
                       if b.get("connectStart") is not None else "reused" if b else "")
            left = f"left to the browser ({r['reason'] or r['outcome']})"
            rows.append([name, left, _ms(r["pausedAt"], origin), connect,
                         _ms(b.get("sendStart"), origin), _ms(b.get("headersEnd"), origin),
                         _ms(b.get("end", r["answeredAt"]), origin), f"browser {b.get('connectionId') or ''}".strip(),
                         ""])
            continue
        t, conn = timing["timing"], timing.get("connection") or {}
        connect = (f"{_ms(t['connect_start'], origin)}–{_ms(t['connect_end'], origin)}"
                   if t["connect_start"] is not None else "reused")
        rows.append([
            name, "helper" if r["status"] is None else f"helper ({r['status']})", _ms(t["queued"], origin), connect,
            _ms(t["sent"], origin),
            _ms(t["first_byte"], origin), _ms(t["last_byte"], origin), conn.get("id", ""),
            f"{conn['pipeline_position']} / {conn['pipeline_depth']}" if conn else "",
        ])
    return report.table(["file", "fetched by", "queued", "connect", "sent", "first byte", "done", "connection",
                         "pipeline position / depth"], rows)


def requests_file(page: dict[str, Any]) -> str:
    """requests.md: the per-request table with what its columns mean."""
    return ("What lanefetch did with each request of the ON load (ms after the navigation started; pipeline "
            "position = the request's number on its connection, depth = requests in flight on that connection when "
            "it was sent, this one included; depth above 1 = sent pipelined).\n\n"
            + "\n".join(requests(page)) + "\n")
