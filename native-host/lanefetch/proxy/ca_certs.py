"""The certificates of Firefox HTTPS acceleration, without I/O: one local certificate authority per site the user
opted in, whose critical X.509 Name Constraints permit only that site's names, and the leaf certificates minted
from it for the hosts Firefox asks the helper's proxy for.

Name Constraints restrict each name type only when a subtree of that type is present, so every CA carries a
permitted dNSName and a permitted iPAddress subtree: the site's own, and for the other type one that matches
nothing any server uses (the reserved `.invalid` domain, the address 0.0.0.0 and ::). A certificate this CA signs
for any other name fails verification in every browser and TLS library that checks constraints."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Scope = Literal["domain", "host"]

CA_VALIDITY = datetime.timedelta(days=30)  # short: a stolen key is worth little for long
RENEW_BEFORE = datetime.timedelta(days=10)  # a successor is installed this long before expiry (it needs a restart)
LEAF_VALIDITY = datetime.timedelta(days=7)
BACKDATE = datetime.timedelta(minutes=10)  # clock skew between helper and browser
_NOTHING_DNS = "invalid"  # RFC 6761: never resolves
_NOTHING_IPS = (ipaddress.ip_network("0.0.0.0/32"), ipaddress.ip_network("::/128"))


@dataclass(frozen=True, order=True)
class Site:
    """A site as the extension names it: a registrable domain with its subdomains, or one exact host."""

    scope: Scope
    name: str  # lower case; an IPv6 address in brackets

    @property
    def key(self) -> str:
        return f"{self.scope}:{self.name}"

    def address(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        try:
            return ipaddress.ip_address(self.name.strip("[]"))
        except ValueError:
            return None

    def covers(self, host: str) -> bool:
        """Whether the helper may mint a certificate for `host` under this site's CA (the site's rule, which is
        never wider than the CA's constraints)."""
        host = host.lower().rstrip(".")
        if self.address() is not None or _is_address(host):
            return _same_address(self.name, host)
        if self.scope == "host":
            return host == self.name
        return host == self.name or host.endswith("." + self.name)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _same_address(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a.strip("[]")) == ipaddress.ip_address(b.strip("[]"))
    except ValueError:
        return False


def name_constraints(site: Site) -> x509.NameConstraints:
    address = site.address()
    dns: list[x509.GeneralName] = [x509.DNSName(_NOTHING_DNS if address is not None else site.name)]
    ips: list[x509.GeneralName]
    if address is not None:
        ips = [x509.IPAddress(ipaddress.ip_network(address))]
    else:
        ips = [x509.IPAddress(n) for n in _NOTHING_IPS]
    return x509.NameConstraints(permitted_subtrees=dns + ips, excluded_subtrees=None)


@dataclass(frozen=True)
class Authority:
    site: Site
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def not_after(self) -> datetime.datetime:
        return self.cert.not_valid_after_utc

    @property
    def nickname(self) -> str:
        """The name in Firefox's certificate store (certutil -n): says what it is and which site it serves. No
        colon: NSS reads "a:b" as token a, certificate b."""
        name = self.site.name.replace(":", "-")
        return f"lanefetch {self.site.scope} {name} {self.cert.serial_number:x}"[:120]

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())

    @classmethod
    def from_pem(cls, site: Site, cert_pem: bytes, key_pem: bytes) -> Authority:
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("not an EC key")
        return cls(site, x509.load_pem_x509_certificate(cert_pem), key)


def make_authority(site: Site, now: datetime.datetime, validity: datetime.timedelta = CA_VALIDITY) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, f"lanefetch local CA for {site.name}"[:64]),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "lanefetch (this computer only)"),
    ])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(name_constraints(site), critical=True)
        # Only TLS server certificates: Firefox honours an EKU in a CA as a limit on what it may issue.
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(site, cert, key)


@dataclass(frozen=True)
class Leaf:
    host: str
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    chain_pem: bytes  # leaf then CA, as a TLS server sends them


def make_leaf(ca: Authority, host: str, now: datetime.datetime, *, check_coverage: bool = True) -> Leaf:
    """A server certificate for `host` signed by `ca`. Refuses hosts outside the site unless told not to (tests
    that prove the constraints hold need such a certificate)."""
    host = host.lower().rstrip(".")
    if check_coverage and not ca.site.covers(host):
        raise ValueError(f"{host} is not part of {ca.site.name}")
    key = ec.generate_private_key(ec.SECP256R1())
    san: x509.GeneralName = (x509.IPAddress(ipaddress.ip_address(host.strip("[]"))) if _is_address(host)
                             else x509.DNSName(host))
    not_after = min(now + LEAF_VALIDITY, ca.not_after)
    cert = (
        x509.CertificateBuilder()
        # No subject: libraries that check a host-like CN against the constraints (OpenSSL) would otherwise
        # compare an IP address in the CN with the dNSName subtree. The name is in the (then critical) SAN.
        .subject_name(x509.Name([]))
        .issuer_name(ca.cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName([san]), critical=True)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return Leaf(host, cert, key, cert.public_bytes(serialization.Encoding.PEM) + ca.cert_pem())
