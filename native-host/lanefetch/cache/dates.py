"""HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient
must still accept. Times are POSIX seconds (UTC)."""

from __future__ import annotations

import calendar
from email.utils import formatdate, parsedate_tz


def parse_http_date(value: str | None) -> float | None:
    """Seconds since the epoch, or None for an absent or invalid date."""
    if not value:
        return None
    try:
        parts = parsedate_tz(value.strip())
        if parts is None:
            return None
        stamp = calendar.timegm(parts[:6])  # parsedate_tz already widened RFC 850 two-digit years
        return float(stamp - (parts[9] or 0))
    except (ValueError, OverflowError, TypeError):
        return None


def format_http_date(seconds: float) -> str:
    return formatdate(seconds, usegmt=True)
