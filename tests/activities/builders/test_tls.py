"""mTLS objects and pod wiring, after raycluster_mtls_controller.go and pod.go configureTLS."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import build_head_pod, build_worker_pod
from activities.builders.tls import build_tls_objects, certificate_needs_update
from tests.activities.builders.fixtures import (
    FQDN,
    HEAD_POD,
    WORKER_POD,
    cluster,
    env_of,
    instance_dict,
)

TLS_ENV = {
    "RAY_USE_TLS": "1",
    "RAY_TLS_SERVER_CERT": "/etc/ray/tls/tls.crt",
    "RAY_TLS_SERVER_KEY": "/etc/ray/tls/tls.key",
    "RAY_TLS_CA_CERT": "/etc/ray/tls/ca.crt",
}
MOUNT = {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": True}


def tls_doc(enabled: bool = True, autoscaling: bool = False) -> dict[str, Any]:
    doc = instance_dict()
    doc["spec"]["tlsOptions"] = {"enabled": enabled}
    doc["spec"]["enableInTreeAutoscaling"] = autoscaling
    return doc


@pytest.mark.parametrize("tls_options", [None, {}, {"enabled": False}])
def test_off_unless_enabled(tls_options: dict[str, Any] | None) -> None:
    doc = instance_dict()
    if tls_options is not None:
        doc["spec"]["tlsOptions"] = tls_options
    model = cluster(doc)
    assert build_tls_objects(model) == []
    head = build_head_pod(model, HEAD_POD)
    assert "RAY_USE_TLS" not in env_of(head["spec"]["containers"][0])
    assert not [v for v in head["spec"].get("volumes") or [] if v["name"] == "ray-tls"]


def test_pki_chain_names_and_order() -> None:
    objects = build_tls_objects(cluster(tls_doc()), ["10.0.0.2"], ["10.0.0.4", "10.0.0.3"])
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Issuer", "ray-selfsigned-issuer-raycluster-sample"),
        ("Certificate", "ray-ca-certificate-raycluster-sample"),
        ("Issuer", "ray-ca-issuer-raycluster-sample"),
        ("Certificate", "ray-head-cert-raycluster-sample"),
        ("Certificate", "ray-worker-cert-raycluster-sample"),
    ]
    selfsigned, ca, ca_issuer, head, worker = objects
    assert selfsigned["spec"] == {"selfSigned": {}}
    assert ca["spec"]["isCA"] is True
    assert ca["spec"]["secretName"] == "raycluster-sample-ca-secret-uid-1234"
    assert ca["spec"]["issuerRef"]["name"] == "ray-selfsigned-issuer-raycluster-sample"
    assert ca["spec"]["privateKey"] == {"algorithm": "RSA", "size": 4096}
    assert ca_issuer["spec"] == {"ca": {"secretName": "raycluster-sample-ca-secret-uid-1234"}}
    assert head["spec"]["secretName"] == "ray-head-secret-raycluster-sample"
    assert head["spec"]["dnsNames"] == sorted(["localhost", FQDN])
    assert head["spec"]["ipAddresses"] == ["10.0.0.2", "127.0.0.1"]
    assert worker["spec"]["secretName"] == "ray-worker-secret-raycluster-sample"
    assert worker["spec"]["dnsNames"] == ["localhost"]
    assert worker["spec"]["ipAddresses"] == ["10.0.0.3", "10.0.0.4", "127.0.0.1"]
    for leaf in (head, worker):
        assert leaf["spec"]["issuerRef"] == {
            "name": "ray-ca-issuer-raycluster-sample",
            "kind": "Issuer",
            "group": "cert-manager.io",
        }
        assert leaf["spec"]["usages"] == [
            "digital signature",
            "key encipherment",
            "server auth",
            "client auth",
        ]
        assert (leaf["spec"]["duration"], leaf["spec"]["renewBefore"]) == ("2160h0m0s", "360h0m0s")
    components = [o["metadata"]["labels"]["app.kubernetes.io/component"] for o in objects]
    assert components == [
        "selfsigned-issuer",
        "ca-certificate",
        "ca-issuer",
        "head-certificate",
        "worker-certificate",
    ]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "uid-1234" for o in objects)


def test_only_leaf_sans_and_labels_cause_updates() -> None:
    model = cluster(tls_doc())
    old = build_tls_objects(model, ["10.0.0.2"], ["10.0.0.3"])
    new = build_tls_objects(model, ["10.0.0.9"], ["10.0.0.3"])
    assert [certificate_needs_update(o, n) for o, n in zip(old, new, strict=True)] == [
        False,
        False,
        False,
        True,
        False,
    ]
    reordered = {**new[3], "spec": {**new[3]["spec"], "ipAddresses": ["127.0.0.1", "10.0.0.9"]}}
    assert not certificate_needs_update(reordered, new[3])


def test_pods_mount_the_leaf_secret_and_wait_for_their_ip() -> None:
    model = cluster(tls_doc(autoscaling=True))
    head = build_head_pod(model, HEAD_POD)
    worker = build_worker_pod(model, "small-group", WORKER_POD)
    for pod, secret in (
        (head, "ray-head-secret-raycluster-sample"),
        (worker, "ray-worker-secret-raycluster-sample"),
    ):
        spec = pod["spec"]
        assert {"name": "ray-tls", "secret": {"secretName": secret}} in spec["volumes"]
        ray = spec["containers"][0]
        assert TLS_ENV.items() <= env_of(ray).items()
        assert MOUNT in ray["volumeMounts"]
        wait = spec["initContainers"][0]
        assert wait["name"] == "wait-for-tls-ip-san"
        assert wait["command"] == ["sh", "-c"]
        assert 'grep -qE "IP Address:${POD_IP}([^0-9.]|$)"' in wait["args"][0]
        assert wait["env"][0]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    autoscaler = head["spec"]["containers"][1]
    assert autoscaler["name"] == "autoscaler"
    assert TLS_ENV.items() <= env_of(autoscaler).items()
    assert MOUNT in autoscaler["volumeMounts"]
    gcs_wait = worker["spec"]["initContainers"][1]
    assert gcs_wait["name"] == "wait-gcs-ready"
    assert TLS_ENV.items() <= env_of(gcs_wait).items()


def test_user_tls_settings_are_kept() -> None:
    doc = tls_doc()
    head = doc["spec"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["env"].append({"name": "RAY_TLS_CA_CERT", "value": "/mine/ca.crt"})
    head["volumes"] = [{"name": "ray-tls", "secret": {"secretName": "my-own"}}]
    pod = build_head_pod(cluster(doc), HEAD_POD)
    assert env_of(pod["spec"]["containers"][0])["RAY_TLS_CA_CERT"] == "/mine/ca.crt"
    tls_volumes = [v for v in pod["spec"]["volumes"] if v["name"] == "ray-tls"]
    assert tls_volumes == [{"name": "ray-tls", "secret": {"secretName": "my-own"}}]
