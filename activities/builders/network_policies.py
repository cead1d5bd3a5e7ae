"""The NetworkPolicies of `spec.networkPolicy`: one for the head, one per worker group.

KubeRay's NetworkPolicy controller (`networkpolicy_controller.go`) isolates a cluster's pods:
the policy types follow the mode (DenyAll both directions, DenyAllIngress or DenyAllEgress
one), and inside each denied direction the only base exception is traffic to and from pods of
the same cluster. The head additionally admits the submitter pod of a K8sJobMode RayJob that
owns the cluster, on the dashboard port. Everything else (DNS egress, operator or user access)
is the user's to add through `head`, `worker` or `workerGroups[*]` rules, which are appended
verbatim. Unlike most owned objects, KubeRay updates these when the spec changes and deletes
the policies of removed groups, so the builder also says how to compare and what is stale.
"""

from __future__ import annotations

import copy

from activities.builders import names
from crds import constants as k
from crds.common import JSONObject
from crds.enums import JobSubmissionMode, NetworkPolicyMode, RayNodeType
from crds.raycluster import NetworkPolicyConfig, NetworkPolicyRules, RayCluster

_INGRESS, _EGRESS = "Ingress", "Egress"


def head_policy_name(cluster_name: str) -> str:
    """`<cluster>-head`."""
    return f"{cluster_name}-head"


def worker_policy_name(cluster_name: str, group_name: str) -> str:
    """`<cluster>-workers-<group>`."""
    return f"{cluster_name}-workers-{group_name}"


def build_network_policies(cluster: RayCluster) -> list[JSONObject]:
    """The head policy, then one per worker group in spec order; none without the option."""
    config = cluster.spec.network_policy
    if config is None:
        return []
    mode = config.mode or NetworkPolicyMode.DENY_ALL
    head_selector = {k.LABEL_CLUSTER: cluster.name, k.LABEL_NODE_TYPE: RayNodeType.HEAD.value}
    policies = [
        _policy(
            cluster,
            head_policy_name(cluster.name),
            k.HEAD_GROUP_VALUE,
            head_selector,
            _spec(mode, _head_ingress(cluster), _base_rules(cluster, "to"), config.head),
        )
    ]
    for group in cluster.spec.worker_group_specs or []:
        selector = {
            k.LABEL_CLUSTER: cluster.name,
            k.LABEL_NODE_TYPE: RayNodeType.WORKER.value,
            k.LABEL_GROUP: group.group_name,
        }
        rules = _worker_rules(config, group.group_name)
        spec = _spec(mode, _base_rules(cluster, "from"), _base_rules(cluster, "to"), rules)
        name = worker_policy_name(cluster.name, group.group_name)
        policies.append(_policy(cluster, name, group.group_name, selector, spec))
    return policies


def needs_update(existing: JSONObject, desired: JSONObject) -> bool:
    """Whether an existing policy's spec or labels differ from the desired one.

    Ports without a protocol count as TCP, as the API server defaults them, so a user rule
    that omits it does not cause an update on every pass (`normalizeNetworkPolicyPorts`).
    """
    return (
        _normalized(existing.get("spec") or {}) != _normalized(desired["spec"])
        or ((existing.get("metadata") or {}).get("labels") or {}) != desired["metadata"]["labels"]
    )


def stale_policy_names(
    cluster: RayCluster, existing: list[JSONObject], desired: list[JSONObject]
) -> list[str]:
    """Policies labelled with the cluster and owned by it that are no longer wanted."""
    wanted = {p["metadata"]["name"] for p in desired}
    return sorted(
        p["metadata"]["name"]
        for p in existing
        if p["metadata"]["name"] not in wanted and names.is_controlled_by(p, cluster)
    )


def _policy(
    cluster: RayCluster, name: str, group: str, selector: dict[str, str], spec: JSONObject
) -> JSONObject:
    labels = {
        k.LABEL_CLUSTER: cluster.name,
        k.LABEL_GROUP: group,
        k.LABEL_APP_NAME: k.APP_NAME_VALUE,
        k.LABEL_CREATED_BY: k.CREATED_BY_VALUE,
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": cluster.namespace,
            "labels": labels,
            "ownerReferences": [names.owner_reference(cluster)],
        },
        "spec": {"podSelector": {"matchLabels": selector}, **spec},
    }


def _spec(
    mode: NetworkPolicyMode,
    ingress: list[JSONObject],
    egress: list[JSONObject],
    custom: NetworkPolicyRules | None,
) -> JSONObject:
    # Listing a policy type denies everything in that direction that no rule admits, so each
    # type appears only when the mode denies that direction.
    spec: JSONObject = {"policyTypes": []}
    if mode in (NetworkPolicyMode.DENY_ALL, NetworkPolicyMode.DENY_ALL_INGRESS):
        spec["policyTypes"].append(_INGRESS)
        extra = (custom.ingress_rules if custom else None) or []
        spec["ingress"] = [*ingress, *copy.deepcopy(extra)]
    if mode in (NetworkPolicyMode.DENY_ALL, NetworkPolicyMode.DENY_ALL_EGRESS):
        spec["policyTypes"].append(_EGRESS)
        extra = (custom.egress_rules if custom else None) or []
        spec["egress"] = [*egress, *copy.deepcopy(extra)]
    return spec


def _base_rules(cluster: RayCluster, direction: str) -> list[JSONObject]:
    """All ports to or from the cluster's own pods."""
    return [{direction: [{"podSelector": {"matchLabels": {k.LABEL_CLUSTER: cluster.name}}}]}]


def _head_ingress(cluster: RayCluster) -> list[JSONObject]:
    rules = _base_rules(cluster, "from")
    peer = _rayjob_submitter(cluster)
    if peer is not None:
        port = _head_port(cluster, "dashboard-port", k.PORT_DASHBOARD)
        rules.append({"from": [peer], "ports": [{"protocol": "TCP", "port": port}]})
    return rules


def _rayjob_submitter(cluster: RayCluster) -> JSONObject | None:
    """The submitter pod of the K8sJobMode RayJob controlling this cluster, as a peer."""
    if cluster.labels.get(k.LABEL_JOB_SUBMISSION_MODE) != JobSubmissionMode.K8S_JOB.value:
        return None
    for ref in cluster.metadata.owner_references or []:
        if (
            ref.get("kind") == "RayJob"
            and ref.get("controller") is True
            and str(ref.get("apiVersion", "")).startswith("ray.io/")
        ):
            labels = {
                k.LABEL_ORIGINATED_FROM_CR_NAME: ref.get("name", ""),
                k.LABEL_ORIGINATED_FROM_CRD: names.CREATOR_RAYJOB,
            }
            return {"podSelector": {"matchLabels": labels}}
    return None


def _head_port(cluster: RayCluster, param: str, default: int) -> int:
    value = (cluster.spec.head_group_spec.ray_start_params or {}).get(param)
    try:
        return int(str(value)) if value is not None else default
    except ValueError:
        return default


def _worker_rules(config: NetworkPolicyConfig, group_name: str) -> NetworkPolicyRules | None:
    """The group's own entry in `workerGroups`, else the shared `worker` rules."""
    for entry in config.worker_groups or []:
        if entry.group_name == group_name:
            return entry
    return config.worker


def _normalized(spec: JSONObject) -> JSONObject:
    spec = copy.deepcopy(spec)
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in rule.get("ports") or []:
                port.setdefault("protocol", "TCP")
    return spec
