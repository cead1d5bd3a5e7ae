"""The certificates and keys of a one-node control plane, made once under its state directory.

One CA signs everything: the API server's serving certificate (named for every address pods
and tools use), client certificates whose subject is the identity RBAC sees (CN is the user,
O the groups: `admin` in `system:masters`, the controller manager and the scheduler as their
built-in users, the node as `system:node:<name>` in `system:nodes`, the API server towards the
kubelet, kube-proxy's `system:kube-proxy`, which the node's Service networking uses to read
EndpointSlices the Node authorizer does not give a kubelet), the kubelet's serving
certificate, and the service-account signing key pair. A
second start finds the files and reuses them, so tokens and kubeconfigs stay valid.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALID_FOR = datetime.timedelta(days=3650)
_BACKDATE = datetime.timedelta(minutes=5)  # tolerate small clock differences between readers
_PRIVATE = 0o600


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, as files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client certificate says its holder is."""

    file_name: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN = ClientIdentity("admin", "kubernetes-admin", ("system:masters",))
CONTROLLER_MANAGER = ClientIdentity("controller-manager", "system:kube-controller-manager")
SCHEDULER = ClientIdentity("scheduler", "system:kube-scheduler")
APISERVER_TO_KUBELET = ClientIdentity("apiserver-kubelet-client", "kube-apiserver-kubelet-client")
KUBE_PROXY = ClientIdentity("kube-proxy", "system:kube-proxy")
"""Bound to the built-in role `system:node-proxier`: Services, EndpointSlices, nodes, events."""


def node_identity(node: str) -> ClientIdentity:
    """The kubelet's client identity, which the Node authorizer and NodeRestriction expect."""
    return ClientIdentity(f"node-{node}", f"system:node:{node}", ("system:nodes",))


class Pki:
    """The files under `STATE/pki`, created on first use."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    @property
    def ca(self) -> Pair:
        """The one certificate authority."""
        return Pair(self.dir / "ca.crt", self.dir / "ca.key")

    @property
    def service_account_key(self) -> Path:
        """The key service-account tokens are signed with."""
        return self.dir / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        """What the API server verifies service-account tokens with."""
        return self.dir / "sa.pub"

    def ensure_ca(self) -> Pair:
        """Create the CA and the service-account keys unless they exist."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.ca.cert.exists():
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kuberay-temporal-ca")])
            cert = (
                certificate_builder(name, name, key.public_key())
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(_ca_usage(), critical=True)
                .sign(key, hashes.SHA256())
            )
            _write(self.ca, cert, key)
        if not self.service_account_key.exists():
            sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            _write_private(self.service_account_key, sa)
            public = sa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            self.service_account_public_key.write_bytes(public)
        return self.ca

    def server(
        self, file_name: str, common_name: str, dns: Sequence[str], ips: Sequence[str]
    ) -> Pair:
        """A serving certificate for these names and addresses (made once)."""
        pair = Pair(self.dir / f"{file_name}.crt", self.dir / f"{file_name}.key")
        if not pair.cert.exists():
            names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
            names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
            self._issue(
                pair,
                x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
                ExtendedKeyUsageOID.SERVER_AUTH,
                names,
            )
        return pair

    def client(self, identity: ClientIdentity) -> Pair:
        """A client certificate for `identity` (made once)."""
        pair = Pair(self.dir / f"{identity.file_name}.crt", self.dir / f"{identity.file_name}.key")
        if not pair.cert.exists():
            attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in identity.groups]
            attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, identity.user))
            self._issue(pair, x509.Name(attributes), ExtendedKeyUsageOID.CLIENT_AUTH, [])
        return pair

    def _issue(
        self,
        pair: Pair,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        names: list[x509.GeneralName],
    ) -> None:
        ca_pair = self.ensure_ca()
        ca_cert = x509.load_pem_x509_certificate(ca_pair.cert.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_pair.key.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            certificate_builder(subject, ca_cert.subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        _write(pair, builder.sign(ca_key, hashes.SHA256()), key)


def certificate_builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    """A certificate of `subject` signed by `issuer`, valid ten years from five minutes ago."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + _VALID_FOR)
    )


def _ca_usage() -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )


def _write(pair: Pair, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    _write_private(pair.key, key)
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_private(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.touch(mode=_PRIVATE)
    path.write_bytes(data)
