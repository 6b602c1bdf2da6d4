"""Certificates for the Firefox HTTPS tests (run with the helper's Python, which has `cryptography`).

`test-certs.py origins DIR`: an unconstrained test CA (the origins' own, trusted by the test Firefox profile like a
public CA and by the helper only through LANEFETCH_TEST_UPSTREAM_CA_FILE), a server certificate for 127.0.0.1 and
127.0.0.2 signed by it, and one for 127.0.0.1 signed by a CA nobody trusts (a bad upstream certificate).
`test-certs.py names DIR NAME...`: a test CA and a server certificate for these DNS names (HSTS is never noted for an
IP address, so an HSTS test needs a name: the browser maps it to loopback with --host-resolver-rules).
`test-certs.py outside DATA_DIR HOST DIR`: a certificate for HOST minted with the lanefetch CA found under the
helper's DATA_DIR although HOST is outside its name constraints (what a thief of the key could make)."""

from __future__ import annotations

import datetime
import ipaddress
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NOW = datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _ca(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(NOW - datetime.timedelta(hours=1))
            .not_valid_after(NOW + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, ips: list[str], out: Path, name: str,
          dns: list[str] | None = None) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(hours=1)).not_valid_after(NOW + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
                                                       + [x509.DNSName(d) for d in dns or []]),
                           critical=True)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (out / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM)
                                      + ca.public_bytes(serialization.Encoding.PEM))
    (out / f"{name}.key").write_bytes(_key_pem(key))


def main(argv: list[str]) -> None:
    if argv[0] == "origins":
        out = Path(argv[1])
        ca, key = _ca("lanefetch tests: origins' CA")
        (out / "upstream-ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        _leaf(ca, key, ["127.0.0.1", "127.0.0.2"], out, "origin")
        rogue, rogue_key = _ca("lanefetch tests: a CA nobody trusts")
        _leaf(rogue, rogue_key, ["127.0.0.1"], out, "rogue")
    elif argv[0] == "names":
        out = Path(argv[1])
        ca, key = _ca("lanefetch tests: origins' CA")
        (out / "upstream-ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        _leaf(ca, key, [], out, "origin", argv[2:])
    elif argv[0] == "outside":
        data, host, out = Path(argv[1]), argv[2], Path(argv[3])
        key_file = next((data / "lanefetch" / "firefox-https").rglob("*.key"))
        ca = x509.load_pem_x509_certificate(key_file.with_suffix(".pem").read_bytes())
        ca_key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        _leaf(ca, ca_key, [host], out, "outside")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
