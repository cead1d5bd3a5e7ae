"""The head's Ingress, after KubeRay v1.7's common/ingress.go and reconcileIngressKubernetes."""

from __future__ import annotations

from typing import Any

from activities.builders.ingress import (
    adopt_class,
    build_head_ingress,
    ingress_needs_update,
    wants_ingress,
)
from tests.activities.builders.fixtures import cluster, head_container, instance_dict


def ingress_doc(**head: Any) -> dict[str, Any]:
    doc = instance_dict()
    doc["spec"]["headGroupSpec"].update(enableIngress=True, **head)
    return doc


def test_only_when_enabled() -> None:
    assert not wants_ingress(cluster(instance_dict()))
    off = ingress_doc()
    off["spec"]["headGroupSpec"]["enableIngress"] = False
    assert not wants_ingress(cluster(off)) and wants_ingress(cluster(ingress_doc()))


def test_the_defaults_route_everything_to_the_dashboard() -> None:
    doc = ingress_doc()
    head_container(doc)["ports"] = [{"name": "dashboard", "containerPort": 8300}]
    ingress = build_head_ingress(cluster(doc))
    assert ingress["metadata"]["name"] == "raycluster-sample-head-ingress"
    assert ingress["metadata"]["labels"] == {
        "ray.io/cluster": "raycluster-sample",
        "ray.io/identifier": "raycluster-sample-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert ingress["spec"] == {
        "rules": [
            {
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {
                                "service": {
                                    "name": "raycluster-sample-head-svc",
                                    "port": {"number": 8300},
                                }
                            },
                        }
                    ]
                }
            }
        ]
    }


def test_options_and_the_class_annotation() -> None:
    tls = [{"hosts": ["ray.example"], "secretName": "ray-tls"}]
    options = {"host": "ray.example", "path": "/ray", "pathType": "Exact", "tls": tls}
    doc = ingress_doc(ingressOptions=options)
    doc["metadata"]["annotations"] = {
        "kubernetes.io/ingress.class": "nginx",
        "nginx.ingress.kubernetes.io/rewrite-target": "/",
    }
    ingress = build_head_ingress(cluster(doc))
    assert ingress["metadata"]["annotations"] == {"nginx.ingress.kubernetes.io/rewrite-target": "/"}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == tls
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "ray.example"
    assert rule["http"]["paths"][0]["path"] == "/ray"
    assert rule["http"]["paths"][0]["pathType"] == "Exact"
    # The dashboard port defaults to 8265 when the head container names no ports.
    assert rule["http"]["paths"][0]["backend"]["service"]["port"] == {"number": 8265}


def test_a_long_name_is_clipped_like_kuberays() -> None:
    doc = ingress_doc()
    doc["metadata"]["name"] = "a" * 60
    assert build_head_ingress(cluster(doc))["metadata"]["name"] == "a" * 37 + "-head-ingress"


def test_what_counts_as_a_change() -> None:
    desired = build_head_ingress(cluster(ingress_doc()))
    live = {"metadata": {**desired["metadata"]}, "spec": {**desired["spec"]}}
    assert not ingress_needs_update(live, desired)
    classed = {**live, "spec": {**live["spec"], "ingressClassName": "default"}}
    assert not ingress_needs_update(classed, desired)  # adopted, not cleared
    assert adopt_class(classed, desired)["spec"]["ingressClassName"] == "default"
    annotated = {**live, "metadata": {**live["metadata"], "annotations": {"x": "y"}}}
    assert ingress_needs_update(annotated, desired)
    relabelled = {**live, "metadata": {**live["metadata"], "labels": {}}}
    assert ingress_needs_update(relabelled, desired)
