"""Shared builders for the validation tables: small valid manifests, edits, and one check.

Every case starts from a valid base manifest of its kind, applies a few edits written as
JSON paths (`spec.workerGroupSpecs[0].minReplicas`, map keys as `["ray.io/x"]`), loads it
through `parse_ray_object` and compares the violations' paths with the expected ones.
(Named test_validation_* to stay inside the files this work owns; it holds no tests.)
"""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

from crds.loading import parse_ray_object
from crds.validation import validate
from crds.violations import Violation

DELETE = object()
"""An edit value meaning "remove this key"."""

Edits = dict[str, Any]
Expected = str | tuple[str, ...] | None

_TOKEN = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["([^"]+)"\]')


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.52.0"}


def cluster_spec() -> dict[str, Any]:
    """A minimal valid RayClusterSpec: a head and one fixed-size worker group."""
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [_container("ray-head")]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 3,
                "rayStartParams": {},
                "template": {"spec": {"containers": [_container("ray-worker")]}},
            }
        ],
    }


def raycluster() -> dict[str, Any]:
    """A valid RayCluster."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo"},
        "spec": cluster_spec(),
    }


def rayjob() -> dict[str, Any]:
    """A valid RayJob that brings its own cluster."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "demo-job"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": cluster_spec(),
        },
    }


def rayservice() -> dict[str, Any]:
    """A valid RayService with one Serve application."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "demo-svc"},
        "spec": {
            "serveConfigV2": "applications:\n  - name: app\n    import_path: app:deployment\n",
            "rayClusterConfig": cluster_spec(),
        },
    }


def raycronjob() -> dict[str, Any]:
    """A valid RayCronJob: the valid RayJob's spec, every day at 02:30 in Taipei."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "demo-cron"},
        "spec": {
            "schedule": "30 2 * * *",
            "timeZone": "Asia/Taipei",
            "jobTemplate": rayjob()["spec"],
        },
    }


def edited(doc: dict[str, Any], edits: Edits) -> dict[str, Any]:
    """A deep copy of `doc` with every `path: value` edit applied (missing parents created)."""
    result = copy.deepcopy(doc)
    for path, value in edits.items():
        keys = [m[1] or (int(m[2]) if m[2] else m[3]) for m in _TOKEN.finditer(path)]
        node: Any = result
        for key, following in itertools.pairwise(keys):
            if isinstance(node, dict) and key not in node:
                node[key] = [] if isinstance(following, int) else {}
            node = node[key]
        if value is DELETE:
            del node[keys[-1]]
        elif isinstance(node, list) and keys[-1] == len(node):
            node.append(copy.deepcopy(value))
        else:
            node[keys[-1]] = copy.deepcopy(value)
    return result


def violations_of(doc: dict[str, Any]) -> list[Violation]:
    """Load through the model (schema errors raise) and run the semantic rules."""
    return validate(parse_ray_object(doc))


def check(doc: dict[str, Any], expected: Expected, phrase: str | None) -> None:
    """Assert the exact violation paths, and that each message carries `phrase`."""
    found = violations_of(doc)
    wanted = () if expected is None else (expected if isinstance(expected, tuple) else (expected,))
    assert sorted(v.path for v in found) == sorted(wanted), found
    if phrase is not None:
        assert all(phrase in v.message for v in found), found
