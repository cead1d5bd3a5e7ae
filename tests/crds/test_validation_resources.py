"""Resource quantities: every one in a CR's pod templates and `resources` maps is checked."""

from __future__ import annotations

from typing import Any

import pytest

from crds.quantities import MAX_AMOUNT
from tests.crds.test_validation_support import (
    Edits,
    Expected,
    check,
    edited,
    raycluster,
    raycronjob,
    rayjob,
    rayservice,
)

W0 = "spec.workerGroupSpecs[0]"
HEAD = "spec.headGroupSpec"
HEAD_POD = f"{HEAD}.template.spec"
RAY = f"{HEAD_POD}.containers[0].resources"
TOO_LARGE = f"larger than {MAX_AMOUNT}"
NOT_A_QUANTITY = "is not a quantity such as 500m, 2Gi or 1.5"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            {f"{RAY}.limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}},
            None,
            None,
            id="valid-limits",
        ),
        pytest.param(
            {f"{RAY}.requests": {"cpu": 0.5, "memory": None}}, None, None, id="yaml-numbers-null"
        ),
        pytest.param(
            {f"{RAY}.limits": {"cpu": "1e400000"}},
            f"{RAY}.limits[cpu]",
            "'1e400000' is " + TOO_LARGE,
            id="huge-cpu-limit",
        ),
        pytest.param(
            {f"{RAY}.requests": {"memory": "lots"}},
            f"{RAY}.requests[memory]",
            "'lots' " + NOT_A_QUANTITY,
            id="unreadable-request",
        ),
        pytest.param(
            {f"{RAY}.requests": {"cpu": "1" * 100_000}},
            f"{RAY}.requests[cpu]",
            "is longer than 64 characters",
            id="long-text",
        ),
        pytest.param(
            {f"{HEAD_POD}.initContainers": [{"name": "i", "resources": {"limits": {"cpu": []}}}]},
            f"{HEAD_POD}.initContainers[0].resources.limits[cpu]",
            NOT_A_QUANTITY,
            id="init-container",
        ),
        pytest.param(
            {f"{HEAD_POD}.resources": {"limits": {"memory": "1e20"}}},
            f"{HEAD_POD}.resources.limits[memory]",
            TOO_LARGE,
            id="pod-level-resources",
        ),
        pytest.param(
            {f"{HEAD_POD}.overhead": {"cpu": "1e99"}},
            f"{HEAD_POD}.overhead[cpu]",
            TOO_LARGE,
            id="overhead",
        ),
        pytest.param(
            {f"{HEAD_POD}.volumes": [{"name": "shm", "emptyDir": {"sizeLimit": "1e99"}}]},
            f"{HEAD_POD}.volumes[0].emptyDir.sizeLimit",
            TOO_LARGE,
            id="empty-dir-size",
        ),
        pytest.param(
            {
                f"{HEAD_POD}.volumes": [
                    {
                        "name": "scratch",
                        "ephemeral": {
                            "volumeClaimTemplate": {
                                "spec": {"resources": {"requests": {"storage": "1e99"}}}
                            }
                        },
                    }
                ]
            },
            f"{HEAD_POD}.volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]",
            TOO_LARGE,
            id="ephemeral-volume-claim",
        ),
        pytest.param(
            {f"{W0}.template.spec.containers[0].resources": {"limits": {"cpu": "1e400000"}}},
            f"{W0}.template.spec.containers[0].resources.limits[cpu]",
            TOO_LARGE,
            id="worker-template",
        ),
        pytest.param(
            {f"{W0}.resources": {"cpu": "1e400000", "custom": "2"}},
            f"{W0}.resources[cpu]",
            TOO_LARGE,
            id="worker-group-resources",
        ),
        pytest.param(
            {f"{HEAD}.resources": {"memory": "a lot"}},
            f"{HEAD}.resources[memory]",
            NOT_A_QUANTITY,
            id="head-group-resources",
        ),
        pytest.param(
            {"spec.autoscalerOptions.resources": {"requests": {"cpu": "1e99"}}},
            "spec.autoscalerOptions.resources.requests[cpu]",
            TOO_LARGE,
            id="autoscaler",
        ),
        pytest.param(
            {f"{RAY}": "not an object", f"{HEAD_POD}.volumes": "nor this"},
            None,
            None,
            id="malformed-shapes-are-the-api-servers-to-refuse",
        ),
    ],
)
def test_cluster_quantities(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


def _huge_cpu(at: str) -> Edits:
    return {f"{at}.containers[0].resources.limits.cpu": "1e400000"}


@pytest.mark.parametrize(
    ("doc", "edits", "expected"),
    [
        pytest.param(
            rayjob(),
            _huge_cpu("spec.rayClusterSpec.headGroupSpec.template.spec"),
            "spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources.limits[cpu]",
            id="rayjob-cluster",
        ),
        pytest.param(
            rayjob(),
            {"spec.submitterPodTemplate.spec.containers": [{"name": "s", "image": "i"}]}
            | _huge_cpu("spec.submitterPodTemplate.spec"),
            "spec.submitterPodTemplate.spec.containers[0].resources.limits[cpu]",
            id="rayjob-submitter",
        ),
        pytest.param(
            rayservice(),
            _huge_cpu("spec.rayClusterConfig.headGroupSpec.template.spec"),
            "spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].resources.limits[cpu]",
            id="rayservice-cluster",
        ),
        pytest.param(
            raycronjob(),
            {"spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].resources": {"cpu": "1e99"}},
            "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].resources[cpu]",
            id="raycronjob-template",
        ),
    ],
)
def test_every_kind_checks_its_quantities(doc: dict[str, Any], edits: Edits, expected: str) -> None:
    check(edited(doc, edits), expected, TOO_LARGE)
