"""Schemaless CRDs for kinds whose own project is not installed here, so their objects store.

Nothing on the local stack installs Volcano, scheduler-plugins or a Gateway API controller,
yet KubeRay's operator and ours write their objects (PodGroups, Gateways, HTTPRoutes); on a
real cluster those projects' CRDs are in place. These stand in for them: group, version,
names and the status subresource as the real ones have them, and no schema, so every field
either operator writes is kept and compared, none pruned.
"""

from __future__ import annotations

from activities.builders import batch_scheduling
from activities.kube.client import JSON


def schemaless_crd(
    group: str, version: str, kind: str, plural: str, short_names: tuple[str, ...] = ()
) -> JSON:
    """A namespaced CRD serving `kind` with any content and a status subresource."""
    metadata: JSON = {"name": f"{plural}.{group}"}
    if group.endswith((".k8s.io", ".kubernetes.io")):
        # A Kubernetes group: kube-apiserver wants the API review's approval recorded.
        metadata["annotations"] = {"api-approved.kubernetes.io": "unapproved, stand-in"}
    names: JSON = {"plural": plural, "singular": kind.lower(), "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": names,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def scheduler_crds(scheduler: str) -> list[JSON]:
    """The PodGroup CRD a batch scheduler's objects need, if it has one."""
    groups = {
        batch_scheduling.VOLCANO: ("scheduling.volcano.sh", "v1beta1"),
        batch_scheduling.SCHEDULER_PLUGINS: ("scheduling.x-k8s.io", "v1alpha1"),
    }
    if scheduler not in groups:
        return []
    group, version = groups[scheduler]
    return [schemaless_crd(group, version, "PodGroup", "podgroups", ("pg",))]


def gateway_api_crds() -> list[JSON]:
    """Gateway and HTTPRoute, for incremental RayService upgrades and the node's data plane."""
    return [
        schemaless_crd("gateway.networking.k8s.io", "v1", kind, plural)
        for kind, plural in (("Gateway", "gateways"), ("HTTPRoute", "httproutes"))
    ]
