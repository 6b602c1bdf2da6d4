"""The helper's side of the browser's TLS for opted-in HTTPS sites: a server TLS context per host (TLS 1.2 or
newer, ALPN h2 or http/1.1) with a leaf certificate minted on demand from the site's CA and kept while valid; and the
origins whose real certificate the engine rejected, so their next CONNECTs are closed unanswered (Firefox then
fails over to a direct connection and shows the certificate error itself)."""

from __future__ import annotations

import datetime
import os
import secrets
import ssl
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..engine.request import Origin
from .ca_certs import make_leaf
from .ca_sites import HttpsSites

MAX_CONTEXTS = 512
REJECTED_MEMORY_S = 60.0
_RENEW_MARGIN_S = 3600.0  # mint a new leaf an hour before the cached one expires


class TlsTerminator:
    def __init__(self, sites: HttpsSites) -> None:
        self.sites = sites
        self._contexts: OrderedDict[str, tuple[ssl.SSLContext, float, int]] = OrderedDict()
        self._rejected: dict[str, float] = {}

    def context_for(self, host: str) -> ssl.SSLContext | None:
        """The server context for a CONNECT to `host`, or None when no loaded CA covers it (then: a plain tunnel)."""
        host = host.lower().rstrip(".")
        ca = self.sites.authority_for(host)
        if ca is None:
            return None
        now = time.time()
        cached = self._contexts.get(host)
        if cached is not None and cached[1] - now > _RENEW_MARGIN_S and cached[2] == ca.cert.serial_number:
            self._contexts.move_to_end(host)
            return cached[0]
        leaf = make_leaf(ca, host, datetime.datetime.fromtimestamp(now, datetime.UTC))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_alpn_protocols(["h2", "http/1.1"])  # h2 first: proxy/h2_server.py
        _load_chain(ctx, leaf.chain_pem, leaf.key)
        self._contexts[host] = (ctx, leaf.cert.not_valid_after_utc.timestamp(), ca.cert.serial_number)
        while len(self._contexts) > MAX_CONTEXTS:
            self._contexts.popitem(last=False)
        return ctx

    def covers(self, origin: Origin) -> bool:
        """Would a CONNECT to this https origin be terminated: a loaded CA covers its host (the site opted in) and its
        upstream certificate was not rejected a moment ago? Asks the sites only: no leaf certificate is made."""
        return (self.sites.authority_for(origin.host.lower().rstrip(".")) is not None
                and not self.is_rejected(str(origin)))

    def upstream_rejected(self, origin: str) -> None:
        self._rejected[origin] = time.monotonic() + REJECTED_MEMORY_S

    def is_rejected(self, origin: str) -> bool:
        now = time.monotonic()
        self._rejected = {o: t for o, t in self._rejected.items() if t > now}
        return origin in self._rejected


def _load_chain(ctx: ssl.SSLContext, chain_pem: bytes, key: ec.EllipticCurvePrivateKey) -> None:
    """ssl loads certificates only from files: the key is written encrypted with a one-time password into a private
    temporary directory and deleted at once."""
    password = secrets.token_bytes(32)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.BestAvailableEncryption(password))
    with tempfile.TemporaryDirectory(prefix="lanefetch-leaf-") as d:
        cert_file, key_file = Path(d) / "chain.pem", Path(d) / "key.pem"
        for path, data in ((cert_file, chain_pem), (key_file, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        ctx.load_cert_chain(cert_file, key_file, password=password)
