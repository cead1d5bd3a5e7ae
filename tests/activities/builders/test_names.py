from __future__ import annotations

import pytest

from activities.builders import names
from crds.enums import RayNodeType
from tests.activities.builders.fixtures import cluster, instance_dict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # KubeRay util_test.go TestCheckName.
        pytest.param(
            "72fbcc7e-a661-4b18e-ca41-e903-fc3ae634b18e-lazer090scholar-director-s",
            "rca41-e903-fc3ae634b18e-lazer090scholar-director-s",
            id="long-starting-with-digit",
        ),
        pytest.param(
            "--------566666--------444433-----------222222----------4444",
            "r6666--------444433-----------222222----------4444",
            id="long-starting-with-punctuation",
        ),
        pytest.param("acceptable-name-head-12345", "acceptable-name-head-12345", id="unchanged"),
        pytest.param("1abc", "rabc", id="short-digit"),
        pytest.param("$abc", "$abc", id="symbol-is-not-punctuation"),
    ],
)
def test_check_name(text: str, expected: str) -> None:
    assert names.check_name(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a" * 70, "a" * 63, id="clipped-from-front"),
        pytest.param("-" + "b" * 10, "r" + "b" * 10, id="punctuation"),
        pytest.param("1abc", "1abc", id="digit-allowed"),
    ],
)
def test_check_label(text: str, expected: str) -> None:
    assert names.check_label(text) == expected


@pytest.mark.parametrize(
    ("cluster_name", "group", "head_prefix", "worker_prefix"),
    [
        pytest.param(
            "raycluster-sample",
            "small",
            "raycluster-sample-head-",
            "raycluster-sample-small-worker-",
            id="short",
        ),
        pytest.param("A" * 53, "g", "a" * 50 + "-head-", "a" * 50 + "-worker-", id="clipped-to-50"),
        pytest.param(
            "c" * 48, "group", "c" * 48 + "-head-", "c" * 48 + "-g-worker-", id="group-clipped"
        ),
    ],
)
def test_pod_name_prefixes(
    cluster_name: str, group: str, head_prefix: str, worker_prefix: str
) -> None:
    data = instance_dict()
    data["metadata"]["name"] = cluster_name
    model = cluster(data)
    assert names.head_pod_name_prefix(model) == head_prefix
    # ENABLE_DETERMINISTIC_HEAD_POD_NAME (KubeRay's TestHeadPodName): the prefix, no dash.
    assert names.deterministic_head_pod_name(model) == head_prefix.removesuffix("-")
    assert names.worker_pod_name_prefix(model, group) == worker_prefix
    assert names.pod_name(head_prefix, "x1y2z") == head_prefix + "x1y2z"


def test_service_names_and_fqdn() -> None:
    data = instance_dict()
    model = cluster(data)
    assert names.head_service_name(model.name, model.spec) == "raycluster-sample-head-svc"
    assert names.head_service_fqdn(model) == "raycluster-sample-head-svc.default.svc.cluster.local"
    assert names.head_service_fqdn(model, "corp.example") == (
        "raycluster-sample-head-svc.default.svc.corp.example"
    )
    data["spec"]["headGroupSpec"]["headService"] = {"metadata": {"name": "custom"}}
    custom = cluster(data)
    assert names.head_service_fqdn(custom) == "custom.default.svc.cluster.local"
    assert names.serve_service_name("rc") == "rc-serve-svc"
    assert names.headless_service_name("rc") == "rc-headless"
    assert names.gcs_storage_pvc_name(model) == "raycluster-sample-gcs-pvc"


def test_selectors_match_association_go() -> None:
    assert names.head_pods_selector("rc") == {"ray.io/cluster": "rc", "ray.io/node-type": "head"}
    assert names.worker_pods_selector("rc") == {
        "ray.io/cluster": "rc",
        "ray.io/node-type": "worker",
    }
    assert names.group_pods_selector("rc", "g") == {"ray.io/cluster": "rc", "ray.io/group": "g"}
    assert names.head_service_selector("rc")["ray.io/identifier"] == "rc-head"
    assert names.redis_cleanup_selector("rc")["ray.io/node-type"] == "redis-cleanup"
    assert names.headless_service_selector("rc") == {"ray.io/headless-worker-svc": "rc"}
    assert names.label_selector_string({"b": "2", "a": "1"}) == "a=1,b=2"


def test_pod_labels_protect_identity_labels() -> None:
    labels = names.pod_labels(
        "rc",
        RayNodeType.WORKER,
        "g",
        {
            "ray.io/cluster": "evil",
            "ray.io/group": "evil",
            "ray.io/node-type": "head",
            "x": "y",
            "app.kubernetes.io/name": "mine",
        },
    )
    assert labels == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "rc",
        "ray.io/node-type": "worker",
        "ray.io/group": "g",
        "ray.io/identifier": "rc-worker",
        "app.kubernetes.io/name": "mine",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "x": "y",
    }


def test_owner_reference_and_creator() -> None:
    data = instance_dict()
    data["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayService"}
    model = cluster(data)
    assert names.owner_reference(model) == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "raycluster-sample",
        "uid": "uid-1234",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert names.creator_kind(model) == "RayService"
    assert names.creator_kind(cluster()) == "RayCluster"
