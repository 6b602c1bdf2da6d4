"""What one lane is believed to do: smoothed round-trip time (like TCP's SRTT, RFC 6298 gains) and
smoothed throughput, from samples the scheduler takes while the lane is busy receiving."""

from __future__ import annotations

from dataclasses import dataclass

RTT_GAIN = 1 / 8  # RFC 6298 alpha
RATE_GAIN = 1 / 4  # throughput moves faster than RTT: slow start and cross traffic change it quickly
RATE_WINDOW = 0.2  # seconds of receiving per throughput sample; shorter ones are mostly noise


@dataclass
class LaneEstimate:
    srtt: float | None = None  # seconds
    rate: float | None = None  # bytes per second while receiving
    _window_bytes: int = 0
    _window_time: float = 0.0

    def rtt_sample(self, seconds: float) -> None:
        if seconds <= 0:
            return
        self.srtt = seconds if self.srtt is None else (1 - RTT_GAIN) * self.srtt + RTT_GAIN * seconds

    def received(self, nbytes: int, busy_seconds: float) -> None:
        """nbytes arrived over busy_seconds during which the lane had a response in progress."""
        self._window_bytes += nbytes
        self._window_time += max(0.0, busy_seconds)
        if self._window_time >= RATE_WINDOW:
            self.rate_sample(self._window_bytes / self._window_time)
            self._window_bytes, self._window_time = 0, 0.0

    def rate_sample(self, bytes_per_s: float) -> None:
        if bytes_per_s <= 0:
            return
        self.rate = bytes_per_s if self.rate is None else (1 - RATE_GAIN) * self.rate + RATE_GAIN * bytes_per_s

    def bdp(self) -> int | None:
        """Bandwidth-delay product in bytes, when both are known."""
        if self.rate is None or self.srtt is None:
            return None
        return int(self.rate * self.srtt)
