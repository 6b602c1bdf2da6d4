"""The helper's private HTTP cache (RFC 9111).

Written here rather than built on hishel (2.0.0, evaluated for this): its sans-I/O core computes a
response's age from the Date header alone (the Age header and the request/response times of §4.2.3
are ignored, so a response that arrives with `Age: 3000, max-age=3600` counts as fresh for an hour),
measures heuristic freshness from *now* rather than from Date (an entry gets fresher as it ages),
compares Vary'd fields without the normalisation §4.1 asks for, and as a private cache stores
responses to requests with Authorization without any explicit permission. Its storage keys entries
by URL with no partition and no per-entry LRU accounting. Fixing those means replacing most of what
it does; what is left is a few hundred lines we can own and test exactly.

Layout: directives.py (Cache-Control), dates.py, vary.py, freshness.py, storability.py,
validation.py (conditional requests and 304 updates), policy.py (the lookup decision) are sans-I/O;
sqlite_store.py and memory_store.py keep entries; tap.py watches a response on its way to the sink;
http_cache.py is the asyncio shell the engine talks to; location.py finds the user's cache directory.

This package's __init__ imports nothing on purpose: the engine imports the cache lazily and the
cache builds on engine modules, so eager imports here would be circular.
"""
