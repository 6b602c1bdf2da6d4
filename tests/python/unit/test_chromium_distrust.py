"""Chains the browser refuses though the system's store trusts them (engine/chromium_distrust.py): an anchor
Chromium's root store does not hold, or holds only for certificates issued before a date."""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from lanefetch.engine.chromium_distrust import DISTRUSTED, refusal, spki_sha256

UTC = datetime.UTC


def _cert(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate | None,
          issuer_key: ec.EllipticCurvePrivateKey, not_before: datetime.datetime) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, name)])
    return (x509.CertificateBuilder().subject_name(subject)
            .issuer_name(issuer.subject if issuer is not None else subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_before + datetime.timedelta(days=90))
            .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
            .sign(issuer_key, hashes.SHA256()))


def _chain(not_before: datetime.datetime) -> tuple[list[bytes], str]:
    """A leaf issued at not_before by a throwaway root: the chain as OpenSSL verifies it, and the root's key hash."""
    root_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root = _cert("Test Root", root_key, None, root_key, datetime.datetime(2020, 1, 1, tzinfo=UTC))
    leaf = _cert("site.test", leaf_key, root, root_key, not_before)
    return [c.public_bytes(serialization.Encoding.DER) for c in (leaf, root)], spki_sha256(root)


def test_a_root_chromium_never_trusts_is_refused_and_one_it_trusts_is_not() -> None:
    chain, spki = _chain(datetime.datetime(2024, 1, 1, tzinfo=UTC))
    assert refusal(chain, {}) is None
    why = refusal(chain, {spki: None})
    assert why is not None and "Test Root" in why and "does not trust" in why


def test_a_root_trusted_until_a_date_refuses_a_leaf_issued_after_it_only() -> None:
    cut_off = datetime.datetime(2024, 11, 11, 23, 59, 59, tzinfo=UTC)
    before, spki_before = _chain(datetime.datetime(2024, 11, 11, 12, 0, tzinfo=UTC))
    after, spki_after = _chain(datetime.datetime(2024, 11, 12, 0, 0, tzinfo=UTC))
    assert refusal(before, {spki_before: cut_off}) is None
    why = refusal(after, {spki_after: cut_off})
    assert why is not None and "2024-11-12" in why and "2024-11-11" in why


def test_no_chain_says_nothing_and_the_table_holds_key_hashes() -> None:
    assert refusal([]) is None  # a resumed handshake verified none
    assert all(len(k) == 64 and int(k, 16) >= 0 for k in DISTRUSTED)
    cut_offs = {v for v in DISTRUSTED.values() if v is not None}
    assert cut_offs == {datetime.datetime(2024, 11, 11, 23, 59, 59, tzinfo=UTC)}  # Entrust's
