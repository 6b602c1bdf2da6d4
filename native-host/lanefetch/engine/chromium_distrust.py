"""Trust anchors of the system's store that Chromium does not trust, or trusts only for certificates issued before a
date (sans-I/O core).

Theory of operation
- Chromium (Debian's `chromium` 156 on Linux included) verifies against the Chrome Root Store compiled into it,
  plus certificates the user trusted in NSS (~/.pki/nssdb); it never reads /etc/ssl/certs. The helper verifies
  against the distribution's store (system_trust.py), Mozilla's list as Debian packages it: 142 roots in Debian
  12's ca-certificates 20230311. 37 of them are in no form in that Chromium (neither the certificate nor its
  public key is in its binary: CAs distrusted for cause, as TrustCor, E-Tugra and Chunghwa Telecom's ePKI, and
  roots the Chrome Root Program retired), so a chain to one of them was fetched and delivered by the helper where
  the browser refuses it.
- And Chromium trusts some roots only for certificates issued before a date (the Chrome Root Store's
  sct_not_after constraint: Entrust's four, for certificates whose earliest signed certificate timestamp is after
  2024-11-11 23:59:59 UTC; the Chrome Root Program's announcement of 2024-06-27).
- DISTRUSTED holds both: the SHA-256 of each anchor's SubjectPublicKeyInfo (a root issued again with the same key,
  as Firmaprofesional's was, is the same anchor to Chromium, and is not listed), with None (never trusted) or the
  cut-off. `refusal` takes a connection's verified chain (leaf first, the anchor OpenSSL found last) and says why
  Chromium would refuse it, or None. The date compared is the leaf's notBefore: Chromium compares the earliest
  SCT, which a certificate can hold apart from its notBefore (a backdated one passes here).
- Refusing costs little: the request goes to the browser (the extension passes a request the helper failed), which
  decides itself. So the list errs on the strict side: an anchor some other Chromium still trusts only loses the
  helper's acceleration for its sites.
- Not covered: the NSS certificates the user trusted for Chromium alone (the helper refuses their chains, as
  before), and anchors OpenSSL found where Chromium would build another path around a distrusted one (refused).
- The list is the Chromium above against Debian 12's store: when either changes it is derived again (the
  certificates of /etc/ssl/certs/ca-certificates.crt whose public key is nowhere in /usr/lib/chromium/chromium).
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import serialization

_ENTRUST = datetime.datetime(2024, 11, 11, 23, 59, 59, tzinfo=datetime.UTC)

#: SHA-256 of an anchor's SubjectPublicKeyInfo (hex) → None (Chromium never trusts it) or the latest issuance date it
#: trusts the anchor for (a leaf whose notBefore is after it is refused).
DISTRUSTED: Mapping[str, datetime.datetime | None] = {
    "e5ca37bc7b6c361979bc6b123ca9a1db019046d7ff5f57dfb854b19d10b0682f": None,  # Atos TrustedRoot 2011
    "510d20e5c47f63cf666b20f61af62bc099a42ac824ffa443a2da7c90b1808a91": None,  # Certigna
    "dbc1e3a15238a0483bcdb8fdec616e03e705a48e2a501157cadf3b9c7311c5e5": None,  # certSIGN ROOT CA
    "6b3b57e9ec88d1bb3d01637ff33c7698b3c9758255e9f01ea9178f3e7f3b2b52": None,  # Certum Trusted Network CA 2
    "c1ad1b1898ec395048df070bfa217e25c913bed8ca6b73de085528846a0103c1": None,  # E-Tugra CA
    "56f2ea8684106d0c73333951059d2bff9ace0a9934f015c5d84c5a959dfbb3cc": None,  # E-Tugra Global Root CA ECC v3
    "b3effbf46bcf66aedf71427e6bd60bf1a1878c7b72cab178703485fda6e3db38": None,  # E-Tugra Global Root CA RSA v3
    "eabc185c4e82d942b1a5978ba3c0181487d6b3b9974e5c49f72f6d0bd9637150": None,  # emSign ECC Root CA - C3
    "b7408b4d2be0238ba37004dd34e276c6019bd2f24c9db7d4980f5f6c359a4bcc": None,  # emSign Root CA - C1
    "6dbfae00d37b9cd73f8fb47de65917af00e0dddf42dbceac20c17c0275ee2095": _ENTRUST,  # Entrust Root CA
    "fea2b7d645fba73d753c1ec9a7870c40e1f7b0c561e927b985bf711866e36f22": _ENTRUST,  # Entrust Root CA - EC1
    "76ee8590374c715437bbca6bba6028eadde2dc6dbbb8c3f610e851f11d1ab7f5": _ENTRUST,  # Entrust Root CA - G2
    "36d7c79f3d089a0ff79972d90923dea5ca76b4ccbaf7c2751cb152e9494f52d0": None,  # Entrust Root CA - G4
    "1ea3c5e43ed66c2da2983a42a4a79b1e906786ce9f1b58621419a00463a87d38": _ENTRUST,  # Entrust.net CA (2048)
    "62554c17005543b237215f04268dcd2fd1c470240ad3c8660e25ae2c59630f55": None,  # ePKI Root CA
    "fee8af929175687f4638a3fc983db8ecd0e5e2a83e737f3fb77b4c22fcbac0a6": None,  # GLOBALTRUST 2020
    "bb52086d0639e8db332775ac8f4e8435d92ceb00f4e24f28fc0eabe240772e80": None,  # HARICA ECC RootCA 2015
    "50cc86ba96db3263c79a43ead07553d9f56659e6907e72d8c026637a1cdc85dc": None,  # HARICA RootCA 2015
    "36c22314131a5fbf1b70ea4ccf4bc13a777d938ec65e1da24e3c2cfd01d3d163": None,  # Hongkong Post Root CA 1
    "58dd61feb36ea7d258724371709149cb121337864cacb2d0999ad20739d06477": None,  # IdenTrust Public Sector Root CA 1
    "f48badd7df6a06690d0ae31373b12855f8dedb14517f362a313101cc98cc6b35": None,  # NetLock Arany (Class Gold)
    "86a68f050034126a540d39db2c5f917ef66a94fb9619fa1ecd827cea46ba0cb0": None,  # QuoVadis Root CA 1 G3
    "8fd112c3c8370f147d5ccd3a7d865eb8dd540783bac69fc60088e3743ff33378": None,  # QuoVadis Root CA 2
    "0c7acaa710226720bbc940349ee2e6148652a89dbf406a232c895f6dc78ebb9a": None,  # QuoVadis Root CA 3
    "2596904dc4d699ae20c2cef4dce47f285937d77464ac370746f52dea76ba0c28": None,  # Secure Global CA
    "bb4128ec9620f2d2a49ce8e2c4e257aebad93a0f11c56b5fa4b00e23759fa39d": None,  # SecureSign RootCA11
    "77290717614b25f12964ebdb38b5f83caadc0f6c36b0777f880fc6dee1d339cc": None,  # SecureTrust CA
    "2a4212605aa3e8aecb0fc19806cf3b40b53b95f1a34dbbd6e3ed27230324abb3": None,  # Security Communication RootCA1
    "d3980aadd21638c70d74a4bb1f8ab5e11724e62ed408f9fa8d3d4d916900286b": None,  # Security Communication RootCA3
    "2b071c59a0a0ae76b0eadb2bad23bad4580b69c3601b630c2eaf0613afa83f92": None,  # Starfield Services Root CA - G2
    "40fcfc28875dccbfebcbdf6cd7433312da63c4efcf3bd7b1b505c22020ae0274": None,  # SwissSign Gold CA - G2
    "9318226f8c83afe47f5f47c24f59ce12dba8c73b181bee6b2ea1f40a06bc1869": None,  # SwissSign Silver CA - G2
    "10ba3485ca8bb6880ab9531a4063e4001555561c7f2e055165f49b2d74fc5f6b": None,  # TeliaSonera Root CA v1
    "7afe4b071a2f1f46f8ba944a26d584d5960b92fb48c3ba1b7cab84905f32aacd": None,  # TrustCor ECA-1
    "ea87f462deefffbd7775aa2a4b7e0fcb91c22eee6df69ed90100ccc73b311476": None,  # TrustCor RootCert CA-1
    "c63d68c648a18b77641c427a669d61c9768a55f4fcd0322eac96c57700299cf1": None,  # TrustCor RootCert CA-2
    "2e06cae1fc20b200e6fb748557a4444bec9317dfff2e4151669e0f7944f0a9e0": None,  # Trustwave Global CA
    "497128fc90656b87290482b223efb72240fe9c421e79938de5f8110cb0be9056": None,  # Trustwave Global ECC P256 CA
    "828b0eeff24654e8ff5841a29dd5d4e3ed30952ca43425a79283407208d39d16": None,  # Trustwave Global ECC P384 CA
    "92c46879626ef2cc1ecea50c72fb5e385844095f21cbf3b283cb82e6b9fc6a58": None,  # TWCA Root CA
    "051cf9fa95e40e9b83edaeda6961f6168c7879c4660172479cdd51ab03cea62b": None,  # XRamp Global CA
}


def spki_sha256(cert: x509.Certificate) -> str:
    """The hex SHA-256 of cert's SubjectPublicKeyInfo: its key, whichever certificate carries it."""
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME) or cert.subject.get_attributes_for_oid(
        x509.NameOID.ORGANIZATIONAL_UNIT_NAME)
    return str(names[0].value) if names else cert.subject.rfc4514_string()


def refusal(chain: Sequence[bytes],
            distrusted: Mapping[str, datetime.datetime | None] | None = None) -> str | None:
    """Why Chromium would refuse the verified chain `chain` (DER, leaf first, trust anchor last), or None: its
    anchor is one it never trusts, or trusts only for certificates issued before a date the leaf's is after. An
    empty chain (a resumed session's, or where the platform verified) says nothing."""
    if not chain:
        return None
    table = DISTRUSTED if distrusted is None else distrusted
    try:
        anchor, leaf = x509.load_der_x509_certificate(chain[-1]), x509.load_der_x509_certificate(chain[0])
    except ValueError as e:  # OpenSSL took what this parser does not: refused, as the browser's strict parser would
        return f"its certificates could not be read ({e})"
    spki = spki_sha256(anchor)
    if spki not in table:
        return None
    cut_off = table[spki]
    if cut_off is None:
        return f"issued under {_name(anchor)}, a root the browser does not trust"
    if leaf.not_valid_before_utc > cut_off:
        return (f"issued under {_name(anchor)} on {leaf.not_valid_before_utc:%Y-%m-%d}, after the browser stopped "
                f"trusting that root for new certificates ({cut_off:%Y-%m-%d})")
    return None
