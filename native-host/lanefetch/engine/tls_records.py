"""Asking origins for TLS records of at most 4 KiB (RFC 6066's max_fragment_length extension).

Theory of operation
- A TLS record is decrypted only whole: its authentication tag is at its end. nginx and Apache write records of up
  to 16 kB (nginx's ssl_buffer_size), so a response's first bytes can wait for the end of a record that the server's
  slow start delivers over two round trips. rust-std's 11 kB document, whose head names six fonts, three stylesheets
  and three scripts, came from nginx in one record of which the first flight brought 10 kB: nothing of it could be
  read until the rest came 600 ms later over `sat` (packet capture, 2026-11-29; the browser alone waits the same).
- A client may ask for smaller records with max_fragment_length (RFC 6066 §4). OpenSSL servers (nginx, Apache with
  OpenSSL 1.1.1 or newer) honour it over TLS 1.2 and 1.3 (measured against nginx 1.22 with OpenSSL 3.0: records of
  4113 bytes instead of 16401); a server that does not know it ignores it. With 4 KiB records at most 4 KiB of
  what arrived waits for the rest of its record, which the h2 session then hands on at once (h2_session.py,
  `_data_so_far`). The cost: one record header and tag per 4 KiB (22 bytes over TLS 1.3, 0.5 %).
- Only on the connections that carry what is read as it arrives: a pool's first connection, which carries a
  page's document and first wave (pool.py). A flight's bulk goes on connections that do not ask: asked on all of
  them, a learned page's second visit over `sat` was slower (rust-std 3.94 → 4.46 s, the flight on one connection
  fewer), while the first visit gained the round trip above.
- Python's ssl module has no call for it, so it is set on the connection's OpenSSL SSL through ctypes
  (SSL_set_tlsext_max_fragment_length, before the handshake), only where that is known to be sound: CPython on
  Linux, through the one libssl the process has loaded (the _ssl module's own, found in /proc/self/maps) when its
  version is the one the ssl module reports, at the SSL_CTX pointer (the first field after the object header of
  CPython's PySSLContext) only once that libssl reads back the context's own options and verify mode from it, and
  at the SSL pointer (PySSLSocket's second field) only once that libssl says it belongs to that SSL_CTX. Anywhere
  else, or when a check fails, nothing is written and records stay as the server writes them.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import ssl
import sys
from pathlib import Path

log = logging.getLogger("lanefetch.engine")

# RFC 6066 §4's codes: 1 = 512, 2 = 1024, 3 = 2048, 4 = 4096 bytes.
MAX_FRAGMENT_4096 = 4
RECORD_BYTES = 4096
# What CPython's verify modes are in OpenSSL's SSL_VERIFY_* bits (CERT_REQUIRED: PEER | FAIL_IF_NO_PEER_CERT).
_OPENSSL_VERIFY_MODE = {ssl.CERT_NONE: 0, ssl.CERT_OPTIONAL: 1, ssl.CERT_REQUIRED: 3}


def loaded_libssl(maps: str) -> str | None:
    """The path of the one libssl mapped into this process (the text of /proc/self/maps), or None when there is
    none or more than one (which of them the ssl module uses would then be a guess)."""
    fields = (line.split(None, 5) for line in maps.splitlines())
    paths = {f[5].strip() for f in fields if len(f) == 6 and Path(f[5].strip()).name.startswith("libssl.so")}
    return paths.pop() if len(paths) == 1 else None


def _pointer_after_head(obj: object, field: int = 0) -> int | None:
    """The `field`-th pointer after a CPython object's header (PyObject_HEAD)."""
    value = ctypes.c_void_p.from_address(id(obj) + object.__basicsize__ + field * ctypes.sizeof(ctypes.c_void_p)).value
    return int(value) if value else None


@functools.cache
def _libssl() -> ctypes.CDLL | None:
    """The libssl the ssl module uses, with the calls used here declared; None where that is not known for sure."""
    if sys.implementation.name != "cpython" or not sys.platform.startswith("linux"):
        return None
    try:
        path = loaded_libssl(Path("/proc/self/maps").read_text())
        if path is None:
            return None
        lib = ctypes.CDLL(path)
        lib.OpenSSL_version_num.restype = ctypes.c_ulong
        if lib.OpenSSL_version_num() != ssl.OPENSSL_VERSION_NUMBER:
            return None
        lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        lib.SSL_get_SSL_CTX.argtypes = [ctypes.c_void_p]
        lib.SSL_get_SSL_CTX.restype = ctypes.c_void_p
        lib.SSL_set_tlsext_max_fragment_length.argtypes = [ctypes.c_void_p, ctypes.c_uint8]
        lib.SSL_set_tlsext_max_fragment_length.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError) as e:  # no such file or symbol: an older or unusual libssl
        log.debug("TLS records stay as servers write them: %s", e)
        return None


def context_pointer(ctx: ssl.SSLContext) -> tuple[ctypes.CDLL, int] | None:
    """The libssl the ssl module uses and ctx's SSL_CTX in it, where both are known for sure (the checks of the
    module's theory: that libssl reads back ctx's own options and verify mode from the pointer); else None."""
    lib = _libssl()
    inner = getattr(ctx, "_ctx", ctx)  # truststore's context wraps the ssl.SSLContext that makes the connections
    if lib is None or not isinstance(inner, ssl.SSLContext):
        return None
    pointer = _pointer_after_head(inner)  # PySSLContext: SSL_CTX *ctx first
    if pointer is None or lib.SSL_CTX_get_options(pointer) != int(inner.options) or (
            lib.SSL_CTX_get_verify_mode(pointer) != _OPENSSL_VERIFY_MODE[inner.verify_mode]):
        return None
    return lib, pointer


def ask_small_records(tls: ssl.SSLObject, ctx: ssl.SSLContext) -> bool:
    """Have this connection, made by ctx and not yet handshaken, ask the server for records of at most
    RECORD_BYTES. False (nothing changed) where that cannot be done soundly here; see the module's theory."""
    lib = _libssl()
    inner = getattr(ctx, "_ctx", ctx)  # truststore's context wraps the ssl.SSLContext that makes the connections
    native = getattr(tls, "_sslobj", None)  # the _ssl module's object under ssl.SSLObject
    if lib is None or not isinstance(inner, ssl.SSLContext) or (type(native).__module__, type(native).__name__) != (
            "_ssl", "_SSLSocket"):
        return False
    ctx_pointer = _pointer_after_head(inner)  # PySSLContext: SSL_CTX *ctx first
    ssl_pointer = _pointer_after_head(native, 1)  # PySSLSocket: PyObject *Socket, then SSL *ssl
    if ctx_pointer is None or ssl_pointer is None:
        return False
    if lib.SSL_CTX_get_options(ctx_pointer) != int(inner.options) or (
            lib.SSL_CTX_get_verify_mode(ctx_pointer) != _OPENSSL_VERIFY_MODE[inner.verify_mode]):
        return False
    if lib.SSL_get_SSL_CTX(ssl_pointer) != ctx_pointer:  # the connection is that context's
        return False
    return bool(lib.SSL_set_tlsext_max_fragment_length(ssl_pointer, MAX_FRAGMENT_4096) == 1)
