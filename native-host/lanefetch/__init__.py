"""lanefetch helper: pipelined HTTP/1.1 fetching for the lanefetch browser extension."""

__version__ = "0.1.0"
