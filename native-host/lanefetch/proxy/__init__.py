"""Proxy mode (Firefox): the helper as a local forward proxy that `proxy.onRequest` selects per request.

request_reader.py (sans-I/O request heads and bodies from the browser) → request_meta.py (what the head
says about priority) → response_writer.py (sans-I/O framing of the answer) → gather.py (requests arriving
together go to the engine together) → server.py (one listener per page context, asyncio) → service.py
(the listeners the extension asked for, one engine, one secret)."""
