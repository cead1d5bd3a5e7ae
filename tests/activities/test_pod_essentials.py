"""A cached pod keeps only its essentials; every reader must see the same pod in them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from activities import builders
from activities.contract import pod_essentials, summarize_pod
from activities.raycluster.owned_objects import PodIps
from crds.raycluster import RayCluster
from tests.reference import REPO_ROOT


def cluster() -> RayCluster:
    body = yaml.safe_load((REPO_ROOT / "samples" / "raycluster.yaml").read_text())
    body["metadata"].update(namespace="default", uid="u")
    return RayCluster.model_validate(body)


def started(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    container = pod["spec"]["containers"][0]["name"]
    pod["metadata"].update(uid="p", deletionTimestamp="2026-12-04T00:00:00Z")
    pod["status"] = {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
        "containerStatuses": [
            {"name": container, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
        ],
        **status,
    }
    return pod


def pods() -> list[dict[str, Any]]:
    ray = cluster()
    head = builders.build_head_pod(ray, "raycluster-head-abcde")
    group = ray.spec.worker_group_specs[0].group_name  # type: ignore[index]
    worker = builders.build_worker_pod(ray, group, "raycluster-worker-fghij")
    return [head, worker, started(head), started(worker, phase="Failed")]


@pytest.mark.parametrize("pod", pods())
def test_the_essentials_read_as_the_whole_pod(pod: dict[str, Any]) -> None:
    essentials = pod_essentials(pod)
    assert summarize_pod(essentials) == summarize_pod(pod)
    assert PodIps.of([essentials]) == PodIps.of([pod])
    assert len(json.dumps(essentials)) < len(json.dumps(pod)) / 2


@pytest.mark.parametrize(("label", "index"), [("3", 3), ("²", None), ("٣", None), ("x", None)])
def test_a_replica_index_is_read_from_ascii_digits_only(label: str, index: int | None) -> None:
    # "²".isdigit() is true and int("²") raises: a pod labelled so failed every read of it.
    pod = copy.deepcopy(pods()[1])
    pod["metadata"]["labels"]["ray.io/worker-group-replica-index"] = label
    assert summarize_pod(pod).replica_index == index
