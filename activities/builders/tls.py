"""mTLS between a cluster's Ray processes: cert-manager objects and what the pods mount.

With `tlsOptions.enabled`, KubeRay (`raycluster_mtls_controller.go`) builds a private PKI per
cluster through cert-manager: a self-signed Issuer bootstraps a CA Certificate, a CA Issuer
signs one head and one worker leaf Certificate whose IP SANs are the live pod IPs of that node
type (Ray checks them, so they follow the pods). `pod.go` configureTLS mounts the leaf Secret at
/etc/ray/tls, sets Ray's RAY_USE_TLS/RAY_TLS_* env on the Ray container, the autoscaler and the
`wait-gcs-ready` init container, and prepends `wait-for-tls-ip-san`, which holds the pod until
cert-manager has put its IP into the certificate. Both behind the alpha RayClusterMTLS
feature gate: with the gate off the spec is refused before anything is built
(`crds.validation.gates`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from activities.builders import names
from activities.builders.env import env_var, has_env
from crds import constants as k
from crds.common import JSONObject
from crds.enums import RayNodeType
from crds.raycluster import RayCluster, RayClusterSpec

TLS_VOLUME = "ray-tls"
TLS_MOUNT_PATH = "/etc/ray/tls"
CERT_MANAGER_API = "cert-manager.io/v1"
LEAF_USAGES = ("digital signature", "key encipherment", "server auth", "client auth")
_LEAF_DURATION, _LEAF_RENEW = "2160h0m0s", "360h0m0s"  # 90 days, renewed 15 days before
_CA_DURATION, _CA_RENEW = "87600h0m0s", "720h0m0s"  # ~10 years, renewed 30 days before
_WAIT_SCRIPT = f"""CERT="{TLS_MOUNT_PATH}/tls.crt"
if [ -z "${{POD_IP}}" ]; then
  POD_IP=$(hostname -i 2>/dev/null | awk '{{print $1}}')
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl not found; cannot verify IP SAN" >&2
  exit 1
fi
echo "Waiting for TLS cert to include IP SAN for ${{POD_IP}}..."
while true; do
  if openssl x509 -in "${{CERT}}" -noout -text 2>/dev/null | grep -qE "IP Address:${{POD_IP}}([^0-9.]|$)"; then
    echo "TLS cert now includes IP SAN for ${{POD_IP}}"
    exit 0
  fi
  echo "IP SAN for ${{POD_IP}} not yet in cert, retrying in 5s..."
  sleep 5
done"""  # noqa: E501 (KubeRay's script, byte for byte)


def is_tls_enabled(spec: RayClusterSpec) -> bool:
    """Whether `tlsOptions.enabled` is true."""
    return spec.tls_options is not None and bool(spec.tls_options.enabled)


def self_signed_issuer_name(cluster_name: str) -> str:
    """`ray-selfsigned-issuer-<cluster>`."""
    return f"ray-selfsigned-issuer-{cluster_name}"


def ca_certificate_name(cluster_name: str) -> str:
    """`ray-ca-certificate-<cluster>`."""
    return f"ray-ca-certificate-{cluster_name}"


def ca_issuer_name(cluster_name: str) -> str:
    """`ray-ca-issuer-<cluster>`."""
    return f"ray-ca-issuer-{cluster_name}"


def ca_secret_name(cluster: RayCluster) -> str:
    """`<cluster>-ca-secret-<first 8 UID chars>`: a re-created cluster never reuses a CA."""
    return f"{cluster.name}-ca-secret-{(cluster.metadata.uid or '')[:8]}"


def certificate_name(cluster_name: str, node_type: RayNodeType) -> str:
    """`ray-head-cert-<cluster>` or `ray-worker-cert-<cluster>`."""
    return f"ray-{node_type.value}-cert-{cluster_name}"


def tls_secret_name(cluster_name: str, node_type: RayNodeType) -> str:
    """`ray-head-secret-<cluster>` or `ray-worker-secret-<cluster>`: the leaf key pair."""
    return f"ray-{node_type.value}-secret-{cluster_name}"


# --- cert-manager objects -----------------------------------------------------------------------


def build_tls_objects(
    cluster: RayCluster,
    head_ips: Iterable[str] = (),
    worker_ips: Iterable[str] = (),
    cluster_domain: str = names.DEFAULT_CLUSTER_DOMAIN,
) -> list[JSONObject]:
    """Issuers and Certificates in KubeRay's order; none unless TLS is enabled.

    Args:
        cluster: the RayCluster.
        head_ips: IPs of the live head pods (the head certificate's IP SANs).
        worker_ips: IPs of the live worker pods (the worker certificate's IP SANs).
        cluster_domain: the DNS domain of the head Service's name in the head certificate.
    """
    if not is_tls_enabled(cluster.spec):
        return []
    name = cluster.name
    ca_issuer_ref = _issuer_ref(ca_issuer_name(name))
    ca_secret = ca_secret_name(cluster)
    ca_spec: JSONObject = {
        "secretName": ca_secret,
        "isCA": True,
        "commonName": f"ray-ca-{name}",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": _CA_DURATION,
        "renewBefore": _CA_RENEW,
        "usages": ["cert sign", "crl sign"],
        "issuerRef": _issuer_ref(self_signed_issuer_name(name)),
    }
    head_dns = sorted({"localhost", names.head_service_fqdn(cluster, cluster_domain)})
    return [
        _issuer(cluster, self_signed_issuer_name(name), "selfsigned-issuer", {"selfSigned": {}}),
        _certificate(cluster, ca_certificate_name(name), "ca-certificate", ca_spec),
        _issuer(cluster, ca_issuer_name(name), "ca-issuer", {"ca": {"secretName": ca_secret}}),
        _certificate(
            cluster,
            certificate_name(name, RayNodeType.HEAD),
            "head-certificate",
            _leaf_spec(cluster, RayNodeType.HEAD, head_dns, head_ips, ca_issuer_ref),
        ),
        _certificate(
            cluster,
            certificate_name(name, RayNodeType.WORKER),
            "worker-certificate",
            _leaf_spec(cluster, RayNodeType.WORKER, ["localhost"], worker_ips, ca_issuer_ref),
        ),
    ]


def certificate_needs_update(existing: JSONObject, desired: JSONObject) -> bool:
    """Whether a leaf Certificate must be rewritten: labels, or DNS/IP SANs as sets.

    Issuers and the CA Certificate never change once created (KubeRay leaves them alone, so
    cert-manager's own normalisation of their spec causes no re-issue).
    """
    if desired["kind"] != "Certificate" or desired["spec"].get("isCA"):
        return False
    spec, want = existing.get("spec") or {}, desired["spec"]
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return (
        labels != desired["metadata"]["labels"]
        or set(spec.get("dnsNames") or []) != set(want["dnsNames"])
        or set(spec.get("ipAddresses") or []) != set(want["ipAddresses"])
    )


def _leaf_spec(
    cluster: RayCluster,
    node_type: RayNodeType,
    dns_names: list[str],
    ips: Iterable[str],
    issuer_ref: JSONObject,
) -> JSONObject:
    return {
        "secretName": tls_secret_name(cluster.name, node_type),
        "duration": _LEAF_DURATION,
        "renewBefore": _LEAF_RENEW,
        "dnsNames": dns_names,
        # 127.0.0.1 always: the autoscaler and the Ray processes in the pod use loopback.
        "ipAddresses": sorted({ip for ip in ips if ip} | {"127.0.0.1"}),
        "usages": list(LEAF_USAGES),
        "issuerRef": issuer_ref,
    }


def _issuer_ref(name: str) -> JSONObject:
    return {"name": name, "kind": "Issuer", "group": "cert-manager.io"}


def _metadata(cluster: RayCluster, name: str, component: str) -> JSONObject:
    return {
        "name": name,
        "namespace": cluster.namespace,
        "labels": {
            k.LABEL_APP_NAME: k.APP_NAME_VALUE,
            k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
            "app.kubernetes.io/component": component,
            k.LABEL_CLUSTER: cluster.name,
        },
        "ownerReferences": [names.owner_reference(cluster)],
    }


def _issuer(cluster: RayCluster, name: str, component: str, config: JSONObject) -> JSONObject:
    return {
        "apiVersion": CERT_MANAGER_API,
        "kind": "Issuer",
        "metadata": _metadata(cluster, name, component),
        "spec": config,
    }


def _certificate(cluster: RayCluster, name: str, component: str, spec: JSONObject) -> JSONObject:
    return {
        "apiVersion": CERT_MANAGER_API,
        "kind": "Certificate",
        "metadata": _metadata(cluster, name, component),
        "spec": spec,
    }


# --- pods ---------------------------------------------------------------------------------------


def set_container_tls_config(container: JSONObject) -> None:
    """Add Ray's TLS env and the certificate mount to a container, unless already there."""
    for name, value in (
        ("RAY_USE_TLS", "1"),
        ("RAY_TLS_SERVER_CERT", f"{TLS_MOUNT_PATH}/tls.crt"),
        ("RAY_TLS_SERVER_KEY", f"{TLS_MOUNT_PATH}/tls.key"),
        ("RAY_TLS_CA_CERT", f"{TLS_MOUNT_PATH}/ca.crt"),
    ):
        if not has_env(container, name):
            container["env"] = [*(container.get("env") or []), env_var(name, value)]
    mounts = container.get("volumeMounts") or []
    if not any(m.get("name") == TLS_VOLUME or m.get("mountPath") == TLS_MOUNT_PATH for m in mounts):
        mount = {"name": TLS_VOLUME, "mountPath": TLS_MOUNT_PATH, "readOnly": True}
        container["volumeMounts"] = [*mounts, mount]


def configure_tls(template: JSONObject, cluster: RayCluster, node_type: RayNodeType) -> None:
    """KubeRay's configureTLS: secret volume, env and mounts, and the IP SAN wait, in place."""
    if not is_tls_enabled(cluster.spec):
        return
    spec = template["spec"]
    volumes = spec.get("volumes") or []
    if not any(v.get("name") == TLS_VOLUME for v in volumes):
        secret = {"secretName": tls_secret_name(cluster.name, node_type)}
        spec["volumes"] = [*volumes, {"name": TLS_VOLUME, "secret": secret}]
    ray_container = spec["containers"][k.RAY_CONTAINER_INDEX]
    set_container_tls_config(ray_container)
    inits = spec.get("initContainers") or []
    for init in inits:
        if init.get("name") == "wait-gcs-ready":  # the user's own init containers are theirs
            set_container_tls_config(init)
    if any(init.get("name") == k.CONTAINER_WAIT_FOR_IP_SAN for init in inits):
        return
    spec["initContainers"] = [_wait_for_ip_san(ray_container), *inits]


def _wait_for_ip_san(ray_container: JSONObject) -> JSONObject:
    small = {"cpu": "50m", "memory": "64Mi"}
    container: JSONObject = {
        "name": k.CONTAINER_WAIT_FOR_IP_SAN,
        "image": ray_container.get("image", ""),
        "command": ["sh", "-c"],
        "args": [_WAIT_SCRIPT],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [{"name": TLS_VOLUME, "mountPath": TLS_MOUNT_PATH, "readOnly": True}],
        "resources": {"limits": dict(small), "requests": dict(small)},
    }
    if ray_container.get("imagePullPolicy"):
        container["imagePullPolicy"] = ray_container["imagePullPolicy"]
    if ray_container.get("securityContext") is not None:
        container["securityContext"] = copy.deepcopy(ray_container["securityContext"])
    return container
