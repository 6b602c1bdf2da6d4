"""A throwaway certificate authority and a localhost server certificate for TLS tests (openssl), made once per
module by the tests that need one (integration/test_tls.py, integration/test_h2_nginx.py) and by the real-pages
benchmark's HTTPS + h2 variant: ca.pem, srv.pem and srv.key in the folder."""

from __future__ import annotations

import subprocess
from pathlib import Path


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_test_pki(d: Path, ca_name: str, san: str = "DNS:localhost") -> Path:
    """The CA and a server certificate for `san` (e.g. "DNS:localhost,IP:10.231.1.2") in folder `d`."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", f"/CN={ca_name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign", cwd=d)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
            "-subj", "/CN=localhost", cwd=d)
    (d / "ext.cnf").write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return d
