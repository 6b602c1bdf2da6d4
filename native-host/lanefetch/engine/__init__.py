"""The pipelined HTTP/1.1 engine: pool (per origin) → connection → protocol (sans-I/O pipeline)."""

from .config import EngineConfig
from .engine import Engine
from .errors import FetchError
from .exchange import DeliveredHead, Sink, TimingReport
from .fetcher import BatchResult, Fetcher, Page
from .request import FetchRequest

__all__ = [
    "BatchResult", "DeliveredHead", "Engine", "EngineConfig", "FetchError", "FetchRequest", "Fetcher", "Page", "Sink",
    "TimingReport",
]
