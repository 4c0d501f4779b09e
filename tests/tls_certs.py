"""Real certificates for the TLS tests and benchmark, made with ``cryptography``: a CA, a
server certificate for 127.0.0.1 and localhost, a client certificate the CA signed, and a
client certificate from another CA (untrusted)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: The server key's password (tls.server.keyPassword).
SERVER_KEY_PASSWORD = "orbit-secret"


@dataclass(frozen=True, slots=True)
class Pki:
    """Paths of PEM files: ``ca`` signed the server and client certificates, ``other_ca``
    the untrusted client's. The server's key is encrypted with SERVER_KEY_PASSWORD."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    untrusted_cert: Path
    untrusted_key: Path

    def server_properties(self, mode: str, need_client_auth: str = "none") -> dict[str, str]:
        """tls.* keys for a server in ``mode`` that checks clients against ``ca``."""
        return {
            "tls.server.mode": mode,
            "tls.config.file": str(self.ca.parent / "absent-tls.properties"),
            "tls.server.certPath": str(self.server_cert),
            "tls.server.keyPath": str(self.server_key),
            "tls.server.keyPassword": SERVER_KEY_PASSWORD,
            "tls.server.authClient": "true",
            "tls.server.trustCertPath": str(self.ca),
            "tls.server.need.client.auth": need_client_auth,
        }

    def client_properties(self, *, trusted: bool = True) -> dict[str, str]:
        """tls.* keys for a client that checks the server against ``ca`` and shows the
        trusted (or the untrusted) client certificate."""
        cert, key = (
            (self.client_cert, self.client_key)
            if trusted
            else (self.untrusted_cert, self.untrusted_key)
        )
        return {
            "tls.enable": "true",
            "tls.config.file": str(self.ca.parent / "absent-tls.properties"),
            "tls.test.mode.enable": "false",
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": str(self.ca),
            "tls.client.certPath": str(cert),
            "tls.client.keyPath": str(key),
        }


def make_pki(folder: Path) -> Pki:
    """Write a CA, its server and client certificates and an untrusted client's to
    ``folder``."""
    ca_key, ca_cert = _authority("OrbitMQ test CA")
    other_key, other_cert = _authority("Someone else's CA")
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue(ca_key, ca_cert, server_key, "127.0.0.1", server=True)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _issue(ca_key, ca_cert, client_key, "orbitmq-client", server=False)
    untrusted_key = ec.generate_private_key(ec.SECP256R1())
    untrusted_cert = _issue(other_key, other_cert, untrusted_key, "intruder", server=False)
    pki = Pki(*(folder / name for name in _FILES))
    _write_cert(pki.ca, ca_cert)
    _write_cert(pki.server_cert, server_cert)
    _write_key(pki.server_key, server_key, SERVER_KEY_PASSWORD)
    _write_cert(pki.client_cert, client_cert)
    _write_key(pki.client_key, client_key, None)
    _write_cert(pki.untrusted_cert, untrusted_cert)
    _write_key(pki.untrusted_key, untrusted_key, None)
    return pki


_FILES = (
    "ca.pem",
    "server.pem",
    "server.key",
    "client.pem",
    "client.key",
    "untrusted.pem",
    "untrusted.key",
)


def _authority(name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (
        _builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _issue(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    key: ec.EllipticCurvePrivateKey,
    name: str,
    *,
    server: bool,
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    usage = (
        x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
        if server
        else (x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH)
    )
    builder = (
        _builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if server:
        names: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.DNSName("localhost"),
        ]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey, password: str | None) -> None:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
