"""A server asking for a client certificate: the helper's connection stops there, and the request goes to the browser.

Theory of operation
- A server may ask the client for a certificate in its handshake (CertificateRequest, RFC 8446 §4.3.2; RFC 5246
  §7.4.4). The browser answers with one the user chose (Chromium asks once per host, or an enterprise policy
  chooses) and is then answered as that user. The helper holds no certificate: OpenSSL sent an empty Certificate,
  and a server that lets such a client in (nginx's `ssl_verify_client optional`, Apache's `optional`) answered it
  as nobody, an answer the helper delivered for a request it does not answer (a login page, or less, where the
  browser gets the user's account). A server that requires one refused the handshake, and the request already
  went to the browser.
- So the helper never answers the question: its contexts have a client certificate callback (OpenSSL's
  SSL_CTX_set_client_cert_cb, through ctypes: Python's ssl module has no call for it) that returns -1, which stops
  the handshake (SSL_ERROR_WANT_X509_LOOKUP, an SSLError whose errno says so); transport.py reports it as a TLS
  failure naming the client certificate, and the extension passes a failed request to the browser, which then
  asks the server itself. OpenSSL calls it only when a server asks, and before anything is sent in answer.
- Only where tls_records.py finds the context's SSL_CTX for sure (CPython on Linux); elsewhere nothing is set and
  the helper answers without a certificate, as before.
"""

from __future__ import annotations

import ctypes
import ssl

from . import tls_records

# int (*client_cert_cb)(SSL *ssl, X509 **x509, EVP_PKEY **pkey): -1 suspends the handshake ("look the certificate up
# and call again"), which the helper never does.
_CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_STOP = _CALLBACK_TYPE(lambda _ssl, _x509, _pkey: -1)  # module-level: OpenSSL keeps the pointer for good


def stop_when_asked(ctx: ssl.SSLContext) -> bool:
    """Have ctx's connections stop their handshake when the server asks for a client certificate; False where
    that cannot be done soundly here (nothing changed)."""
    found = tls_records.context_pointer(ctx)
    if found is None:
        return False
    lib, pointer = found
    lib.SSL_CTX_set_client_cert_cb.argtypes = [ctypes.c_void_p, _CALLBACK_TYPE]
    lib.SSL_CTX_set_client_cert_cb.restype = None
    lib.SSL_CTX_set_client_cert_cb(pointer, _STOP)
    return True


def asked(error: BaseException) -> bool:
    """Is this handshake failure a server's request for a client certificate (stop_when_asked)?"""
    return isinstance(error, ssl.SSLError) and error.errno == ssl.SSL_ERROR_WANT_X509_LOOKUP
