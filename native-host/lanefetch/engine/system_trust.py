"""When the TLS trust the helper verifies against has changed on disk, so that it is read again (sans-I/O core).

Theory of operation
- The helper verifies origins' certificates against the system's trust store (on Linux OpenSSL's bundle file and
  hashed directory, /etc/ssl/certs/ca-certificates.crt and /etc/ssl/certs on Debian; or the one CA file a test
  names). An SSLContext reads that store when it is made and keeps what it read: OpenSSL never forgets a
  certificate it loaded. A helper runs as long as its browser, days at a time: a CA an administrator removed
  (update-ca-certificates after a distrust) stayed trusted by it until the browser restarted, where the browser's
  own verifier follows the change at once.
- So the store's files are watched: a `Stamp` is what stat() says of each of them (device, inode, size and
  modification time; a file replaced by rename gets a new inode, a directory whose entries change a new mtime).
  When a new connection is about to be made, at most every CHECK_EVERY seconds (`StoreWatch.due`), the shell
  (engine.py) takes a new stamp; a stamp that differs from the last one (`StoreWatch.changed`) makes it build a
  new SSLContext, which reads the store again. A few stat() calls per CHECK_EVERY, never a read of the bundle per
  connection; the bundle is read again only when it changed. (Reading it holds the event loop: 25 ms for Debian's
  144 CAs. truststore's Linux context read it again as every connection's handshake began, and never forgot a CA
  removed; on Linux the helper's context reads it itself, once: `load_system_store`, the same locations.)
- A TLS session received under the old store is never resumed under the new one: a resumed handshake carries no
  certificate chain, so nothing would be verified against the new store (pool.py drops its sessions when its
  context changes; the browser flushes its session cache when its trust changes, too).
- Not seen: a certificate file in the directory rewritten in place (same name, the directory unchanged); the
  bundle update-ca-certificates writes is rewritten every time, and it holds every certificate of the directory.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Iterable

CHECK_EVERY = 5.0  # seconds between two looks at the trust store's files (on new connections only)

# Where the system's bundle is when OpenSSL's compiled-in locations hold none (truststore's list, after
# certifi-system-store): Alpine, Arch, Fedora, RHEL, Debian, SUSE.
CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)

#: What stat() said of each watched path: (path, (device, inode, size, mtime in ns)), or (path, None) where there was
#: nothing to stat.
Stamp = tuple[tuple[str, tuple[int, int, int, int] | None], ...]


_HASHED_NAME = re.compile(r"[0-9a-fA-F]{8}\.[0-9]")  # c_rehash's names in a CA directory


def _openssl_defaults_hold_certificates() -> bool:
    """Do OpenSSL's default locations (SSL_CERT_FILE and SSL_CERT_DIR override them) hold a store: their bundle
    exists, or their directory has hashed certificate names? (truststore's test, so the same store is read.)"""
    defaults = ssl.get_default_verify_paths()
    if defaults.cafile:
        return True
    try:
        return bool(defaults.capath) and any(_HASHED_NAME.fullmatch(n) for n in os.listdir(defaults.capath or "."))
    except OSError:
        return False


def system_store_paths() -> list[str]:
    """The files and directory the system's trust store is read from here (load_system_store): OpenSSL's default
    locations, or else the bundles of CA_FILE_CANDIDATES (any of them appearing is a change)."""
    if _openssl_defaults_hold_certificates():
        defaults = ssl.get_default_verify_paths()
        return [p for p in (defaults.cafile, defaults.capath) if p]
    return list(CA_FILE_CANDIDATES)


def load_system_store(ctx: ssl.SSLContext) -> None:
    """Have ctx trust the system's store, read now: OpenSSL's default locations, or else the first bundle of
    CA_FILE_CANDIDATES that exists (as truststore reads it on Linux, where it reads it again at every handshake)."""
    if _openssl_defaults_hold_certificates():
        ctx.set_default_verify_paths()
        return
    bundle = next((f for f in CA_FILE_CANDIDATES if os.path.isfile(f)), None)
    if bundle is not None:
        ctx.load_verify_locations(cafile=bundle)


def stamp(paths: Iterable[str]) -> Stamp:
    """What stat() says of each path now (following links: the bundle is often one)."""
    def one(path: str) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    return tuple((p, one(p)) for p in paths)


class StoreWatch:
    """When to look at the trust store's files again, and whether what they say changed since last time."""

    def __init__(self, every: float | None = None) -> None:
        self.every = CHECK_EVERY if every is None else every
        self._looked_at: float | None = None
        self._seen: Stamp | None = None

    def due(self, now: float) -> bool:
        """Is it time to take a new stamp (`now`: monotonic seconds)?"""
        return self._looked_at is None or now - self._looked_at >= self.every

    def changed(self, seen: Stamp, now: float) -> bool:
        """The store's files say `seen` at `now`: did they change since the last stamp? (The first stamp is the
        store as the context was made from it: no change.)"""
        before, self._seen, self._looked_at = self._seen, seen, now
        return before is not None and before != seen
