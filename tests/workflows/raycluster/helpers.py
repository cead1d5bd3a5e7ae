"""Small builders of specs and pod views for the RayCluster decision tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from activities.contract import PodView
from crds.raycluster import RayClusterSpec
from workflows.raycluster.decisions import ClusterFacts


def spec(*groups: dict[str, Any], **fields: Any) -> RayClusterSpec:
    """A cluster spec with the given worker groups (dicts of WorkerGroupSpec fields)."""
    return RayClusterSpec.model_validate(
        {
            "headGroupSpec": {"rayStartParams": {}, "template": {}},
            "workerGroupSpecs": [
                {"groupName": "g", "rayStartParams": {}, "template": {}, **g} for g in groups
            ],
            **fields,
        }
    )


def facts(cluster_spec: RayClusterSpec, **overrides: Any) -> ClusterFacts:
    groups = [g.group_name for g in cluster_spec.worker_group_specs or []]
    base: dict[str, Any] = {
        "spec": cluster_spec,
        "spec_hash": "h1",
        "head_prefix": "c-head-",
        "worker_prefixes": {g: f"c-{g}-worker-" for g in groups},
    }
    return ClusterFacts(**{**base, **overrides})


def head(name: str = "c-head-aaaaa", **fields: Any) -> PodView:
    base: dict[str, Any] = {"node_type": "head", "group": "headgroup", "phase": "Running"}
    return PodView(name=name, **{**base, "ready": True, **fields})


def worker(name: str, group: str = "g", **fields: Any) -> PodView:
    base: dict[str, Any] = {"node_type": "worker", "group": group, "phase": "Running"}
    return PodView(name=name, **{**base, "ready": True, **fields})


def namer() -> Callable[[str], str]:
    """Deterministic stand-in for the workflow's seeded name suffixes."""
    counter = itertools.count()
    return lambda prefix: f"{prefix}{next(counter):05d}"
