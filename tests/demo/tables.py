"""The demo's terminal tables: OFF vs ON, and what lanefetch did with each request."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bench import report

from demo.load import Load


def comparison(off: Load, on: Load) -> list[str]:
    rows = [
        ["page load time (navigation → load event)", f"{off.page['load_s']:.2f} s", f"{on.page['load_s']:.2f} s",
         f"{off.page['load_s'] / on.page['load_s']:.2f}× faster"],
        ["files the page loaded", off.page["resources"], on.page["resources"], ""],
        ["requests the server answered", off.requests, on.requests, ""],
        ["connections they came on", off.connections, on.connections, ""],
        ["requests that arrived pipelined", off.pipelined, on.pipelined, ""],
        ["kB over the link up / down", f"{off.up_bytes / 1000:.1f} / {off.down_bytes / 1000:.1f}",
         f"{on.up_bytes / 1000:.1f} / {on.down_bytes / 1000:.1f}", ""],
        ["packets the link's queue dropped", off.drops, on.drops, ""],
    ]
    return report.table(["", "lanefetch OFF", "lanefetch ON", ""], rows)


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
            rows.append([name, f"browser ({r['reason'] or r['outcome']})", _ms(r["pausedAt"], origin), connect,
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
