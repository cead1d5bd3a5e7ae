"""The API server as pods see it: HTTPS on the node's pod-network address.

In-cluster clients (the Ray autoscaler sidecar, kubernetes client libraries) find the API
server through `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT`, always speak HTTPS and
verify it against the service-account `ca.crt`. devcluster's main listener is plain HTTP on the
host's loopback, which a pod's network namespace cannot reach, so with the process runtime it
also serves the same routes over TLS on the bridge address 10.244.0.1 (an ephemeral port, since
several devclusters may share the bridge), and the kubelet gives every container the env and
`ca.crt` a real kubelet gives. The certificate is made once per state directory with the
`openssl` command line, signed by a devcluster CA, for the IP and the `kubernetes.default`
names.
"""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

_SERVICE_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650")


@dataclass(frozen=True)
class PodApi:
    """Where pods reach the API server, and the CA that signed its certificate."""

    host: str
    port: int
    ca_crt: bytes

    def env(self) -> dict[str, str]:
        """The variables a kubelet sets for the `kubernetes` Service in every container."""
        port = str(self.port)
        url = f"tcp://{self.host}:{port}"
        return {
            "KUBERNETES_SERVICE_HOST": self.host,
            "KUBERNETES_SERVICE_PORT": port,
            "KUBERNETES_SERVICE_PORT_HTTPS": port,
            "KUBERNETES_PORT": url,
            f"KUBERNETES_PORT_{port}_TCP": url,
            f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
            f"KUBERNETES_PORT_{port}_TCP_PORT": port,
            f"KUBERNETES_PORT_{port}_TCP_ADDR": self.host,
        }


def server_tls(pki_dir: Path, host: str) -> tuple[ssl.SSLContext, bytes]:
    """Return a server TLS context for `host` and the CA certificate (PEM) that verifies it."""
    pki_dir.mkdir(parents=True, exist_ok=True)
    ca_crt, ca_key = pki_dir / "ca.crt", pki_dir / "ca.key"
    crt, key = pki_dir / f"apiserver-{host}.crt", pki_dir / f"apiserver-{host}.key"
    if not ca_crt.exists() or not ca_key.exists():
        _openssl("-subj", "/CN=devcluster-ca", "-keyout", str(ca_key), "-out", str(ca_crt))
    if not crt.exists() or not key.exists():
        names = ",".join([f"IP:{host}", *(f"DNS:{name}" for name in _SERVICE_NAMES)])
        _openssl(
            "-subj", "/CN=kube-apiserver", "-CA", str(ca_crt), "-CAkey", str(ca_key),
            "-addext", f"subjectAltName={names}", "-addext", "basicConstraints=critical,CA:FALSE",
            "-keyout", str(key), "-out", str(crt),
        )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(crt, key)
    return context, ca_crt.read_bytes()


def _openssl(*args: str) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", *_KEY, *args], check=True, capture_output=True, timeout=60
    )
