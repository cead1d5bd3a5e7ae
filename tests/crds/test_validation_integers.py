"""Integer fields: each one within its Go type's range in KubeRay's API, with its path."""

from __future__ import annotations

from typing import Any

import pytest

from crds.common import GoInt, Int32, RayModel
from crds.raycluster import WorkerGroupSpec
from crds.validation.integers import integer_violations
from tests.crds.test_validation_support import (
    edited,
    raycluster,
    raycronjob,
    rayjob,
    rayservice,
    violations_of,
)

INT32 = "the field is an int32 in KubeRay's API"
HUGE = 10**18
"""A number of seconds a RayJob once held: the workflow's deletion timer overflowed on it."""


@pytest.mark.parametrize(
    ("doc", "edits", "path"),
    [
        pytest.param(
            rayjob(),
            {"spec.ttlSecondsAfterFinished": HUGE},
            "spec.ttlSecondsAfterFinished",
            id="ttl-after-finished",
        ),
        pytest.param(
            rayjob(),
            {"spec.activeDeadlineSeconds": HUGE},
            "spec.activeDeadlineSeconds",
            id="active-deadline",
        ),
        pytest.param(
            rayjob(),
            {"spec.preRunningDeadlineSeconds": 2**31},
            "spec.preRunningDeadlineSeconds",
            id="pre-running-deadline",
        ),
        pytest.param(
            rayjob(),
            {
                "spec.deletionStrategy.deletionRules": [
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}
                ],
                "spec.shutdownAfterJobFinishes": False,
                "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds": HUGE,
            },
            "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds",
            id="deletion-rule-ttl",
        ),
        pytest.param(
            rayjob(),
            {"spec.submitterConfig.backoffLimit": -(2**31) - 1},
            "spec.submitterConfig.backoffLimit",
            id="below-the-smallest",
        ),
        pytest.param(
            raycluster(),
            {"spec.workerGroupSpecs[0].replicas": 2**31},
            "spec.workerGroupSpecs[0].replicas",
            id="replicas",
        ),
        pytest.param(
            rayservice(),
            {"spec.rayClusterDeletionDelaySeconds": HUGE},
            "spec.rayClusterDeletionDelaySeconds",
            id="deletion-delay",
        ),
        pytest.param(
            rayservice(),
            {"spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds": HUGE},
            "spec.upgradeStrategy.clusterUpgradeOptions.intervalSeconds",
            id="upgrade-interval",
        ),
        pytest.param(
            raycronjob(),
            {"spec.jobTemplate.activeDeadlineSeconds": HUGE},
            "spec.jobTemplate.activeDeadlineSeconds",
            id="cron-template",
        ),
    ],
)
def test_an_int32_past_its_range_is_refused_at_its_field(
    doc: dict[str, Any], edits: dict[str, Any], path: str
) -> None:
    found = [v for v in violations_of(edited(doc, edits)) if INT32 in v.message]
    assert [v.path for v in found] == [path]
    assert "between -2147483648 and 2147483647" in found[0].message


@pytest.mark.parametrize("value", [2**31 - 1, -(2**31)])
def test_the_ends_of_the_int32_range_are_accepted(value: int) -> None:
    group = WorkerGroupSpec.model_validate({"groupName": "g", "template": {}, "replicas": value})
    assert integer_violations(group, "spec.workerGroupSpecs[0]") == []


def test_a_status_int64_past_its_range_is_refused() -> None:
    doc = edited(raycluster(), {"status.observedGeneration": 2**63})
    found = [v for v in violations_of(doc) if "int64" in v.message]
    assert [v.path for v in found] == ["status.observedGeneration"]


class _Group(RayModel):
    replicas: Int32 | None = None


class _Groups(RayModel):
    by_name: dict[str, _Group]
    listed: list[_Group]


def test_models_in_maps_and_lists_are_walked_with_their_keys() -> None:
    groups = _Groups(
        by_name={"a": _Group(replicas=HUGE)}, listed=[_Group(), _Group(replicas=-HUGE)]
    )
    found = integer_violations(groups, "spec")
    assert [v.path for v in found] == ["spec.byName[a].replicas", "spec.listed[1].replicas"]


def test_int32_is_the_go_type_in_the_schema() -> None:
    [width] = [m for m in Int32.__metadata__ if isinstance(m, GoInt)]
    assert (width.low, width.high) == (-(2**31), 2**31 - 1)
    assert _Group.model_json_schema()["properties"]["replicas"]["anyOf"][0] == {
        "type": "integer",
        "format": "int32",
    }
