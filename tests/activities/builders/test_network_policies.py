"""NetworkPolicies, after KubeRay's networkpolicy_controller.go and its unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders.network_policies import (
    build_network_policies,
    needs_update,
    stale_policy_names,
)
from tests.activities.builders.fixtures import cluster, instance_dict

SAME_CLUSTER = {"podSelector": {"matchLabels": {"ray.io/cluster": "raycluster-sample"}}}
DNS = {"to": [{"namespaceSelector": {}}], "ports": [{"port": 53, "protocol": "UDP"}]}
FROM_MONITORING = {"from": [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}]}


def policies(network_policy: dict[str, Any], **changes: Any) -> list[dict[str, Any]]:
    doc = instance_dict()
    doc["spec"]["networkPolicy"] = network_policy
    doc["metadata"].update(changes)
    return build_network_policies(cluster(doc))


def test_none_without_the_option() -> None:
    assert build_network_policies(cluster()) == []


@pytest.mark.parametrize(
    ("mode", "types"),
    [
        (None, ["Ingress", "Egress"]),  # DenyAll is the default
        ("DenyAll", ["Ingress", "Egress"]),
        ("DenyAllIngress", ["Ingress"]),
        ("DenyAllEgress", ["Egress"]),
    ],
)
def test_mode_selects_policy_types_and_base_rules(mode: str | None, types: list[str]) -> None:
    head, worker = policies({"mode": mode} if mode else {})
    for policy, direction in ((head, "ingress"), (worker, "ingress")):
        assert policy["spec"]["policyTypes"] == types
        if "Ingress" in types:
            assert policy["spec"][direction] == [{"from": [SAME_CLUSTER]}]
        else:
            assert "ingress" not in policy["spec"]
        if "Egress" in types:
            assert policy["spec"]["egress"] == [{"to": [SAME_CLUSTER]}]
        else:
            assert "egress" not in policy["spec"]


def test_names_selectors_labels_and_owner() -> None:
    head, worker = policies({"mode": "DenyAll"})
    assert head["metadata"]["name"] == "raycluster-sample-head"
    assert head["spec"]["podSelector"] == {
        "matchLabels": {"ray.io/cluster": "raycluster-sample", "ray.io/node-type": "head"}
    }
    assert head["metadata"]["labels"] == {
        "ray.io/cluster": "raycluster-sample",
        "ray.io/group": "headgroup",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert worker["metadata"]["name"] == "raycluster-sample-workers-small-group"
    assert worker["spec"]["podSelector"]["matchLabels"] == {
        "ray.io/cluster": "raycluster-sample",
        "ray.io/node-type": "worker",
        "ray.io/group": "small-group",
    }
    assert worker["metadata"]["labels"]["ray.io/group"] == "small-group"
    for policy in (head, worker):
        assert policy["apiVersion"] == "networking.k8s.io/v1"
        assert policy["metadata"]["ownerReferences"][0]["uid"] == "uid-1234"


def test_custom_rules_are_appended_and_do_not_leak() -> None:
    head, worker = policies(
        {"head": {"ingressRules": [FROM_MONITORING], "egressRules": [DNS]}, "worker": {}}
    )
    assert head["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}, FROM_MONITORING]
    assert head["spec"]["egress"] == [{"to": [SAME_CLUSTER]}, DNS]
    assert worker["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]
    assert worker["spec"]["egress"] == [{"to": [SAME_CLUSTER]}]


def test_worker_group_entry_replaces_the_shared_worker_rules() -> None:
    shared = {"egressRules": [DNS]}
    own = {"groupName": "small-group", "ingressRules": [FROM_MONITORING]}
    (_, worker) = policies({"worker": shared, "workerGroups": [own]})
    assert worker["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}, FROM_MONITORING]
    assert worker["spec"]["egress"] == [{"to": [SAME_CLUSTER]}]
    (_, fallback) = policies({"worker": shared, "workerGroups": [{**own, "groupName": "other"}]})
    assert fallback["spec"]["egress"] == [{"to": [SAME_CLUSTER]}, DNS]


RAYJOB_OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "name": "test-job",
    "uid": "12345",
    "controller": True,
}


@pytest.mark.parametrize(
    ("labels", "owners", "params", "submitter_port"),
    [
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [RAYJOB_OWNER], {}, 8265),
        (
            {"ray.io/job-submission-mode": "K8sJobMode"},
            [RAYJOB_OWNER],
            {"dashboard-port": "9999"},
            9999,
        ),
        (
            {"ray.io/job-submission-mode": "K8sJobMode"},
            [RAYJOB_OWNER],
            {"dashboard-port": "x"},
            8265,
        ),
        ({"ray.io/job-submission-mode": "HTTPMode"}, [RAYJOB_OWNER], {}, None),
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [], {}, None),
        (
            {"ray.io/job-submission-mode": "K8sJobMode"},
            [{**RAYJOB_OWNER, "controller": False}],
            {},
            None,
        ),
    ],
)
def test_rayjob_submitter_reaches_the_dashboard(
    labels: dict[str, str],
    owners: list[dict[str, Any]],
    params: dict[str, str],
    submitter_port: int | None,
) -> None:
    doc = instance_dict()
    doc["metadata"].update(labels=labels, ownerReferences=owners)
    doc["spec"]["networkPolicy"] = {}
    doc["spec"]["headGroupSpec"]["rayStartParams"] = params
    head, worker = build_network_policies(cluster(doc))
    expected: list[dict[str, Any]] = [{"from": [SAME_CLUSTER]}]
    if submitter_port is not None:
        submitter = {
            "podSelector": {
                "matchLabels": {
                    "ray.io/originated-from-cr-name": "test-job",
                    "ray.io/originated-from-crd": "RayJob",
                }
            }
        }
        port = {"protocol": "TCP", "port": submitter_port}
        expected.append({"from": [submitter], "ports": [port]})
    assert head["spec"]["ingress"] == expected
    assert worker["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]


def test_update_ignores_a_defaulted_protocol_only() -> None:
    rule = {"from": [SAME_CLUSTER], "ports": [{"port": 80}]}
    (desired, _) = policies({"head": {"ingressRules": [rule]}})
    existing = {"metadata": dict(desired["metadata"]), "spec": dict(desired["spec"])}
    defaulted = {"from": [SAME_CLUSTER], "ports": [{"port": 80, "protocol": "TCP"}]}
    existing["spec"]["ingress"] = [desired["spec"]["ingress"][0], defaulted]
    assert not needs_update(existing, desired)
    (changed, _) = policies({"mode": "DenyAllIngress", "head": {"ingressRules": [rule]}})
    assert needs_update(existing, changed)
    relabelled = {**existing, "metadata": {**existing["metadata"], "labels": {}}}
    assert needs_update(relabelled, desired)


def test_stale_policies_are_owned_ones_of_removed_groups() -> None:
    model = cluster({**instance_dict(), "spec": {**instance_dict()["spec"], "networkPolicy": {}}})
    desired = build_network_policies(model)
    mine = {"controller": True, "uid": "uid-1234"}
    existing = [
        *desired,
        {"metadata": {"name": "raycluster-sample-workers-gone", "ownerReferences": [mine]}},
        {"metadata": {"name": "raycluster-sample-workers-foreign", "ownerReferences": []}},
    ]
    assert stale_policy_names(model, existing, desired) == ["raycluster-sample-workers-gone"]
    assert stale_policy_names(model, existing, []) == [
        "raycluster-sample-head",
        "raycluster-sample-workers-gone",
        "raycluster-sample-workers-small-group",
    ]
