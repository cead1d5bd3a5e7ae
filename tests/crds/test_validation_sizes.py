"""The size ceilings of a RayClusterSpec: counts KubeRay takes up to int32, refused here."""

from __future__ import annotations

from typing import Any

import pytest

from crds.loading import parse_ray_object
from crds.raycluster import RayCluster
from crds.validation.sizes import MAX_HOSTS, MAX_WORKER_GROUPS, MAX_WORKER_PODS, oversized
from tests.crds.test_validation_support import (
    DELETE,
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
W1 = "spec.workerGroupSpecs[1]"
INT32_MAX = 2**31 - 1
UNBOUNDED = {f"{W0}.maxReplicas": DELETE}
"""The CRD's default maxReplicas (no maximum), so that replicas alone decide."""


def _groups(count: int, **fields: Any) -> Edits:
    base = raycluster()["spec"]["workerGroupSpecs"][0]
    groups = [base | {"groupName": f"g{i}", **fields} for i in range(count)]
    return {"spec.workerGroupSpecs": groups}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            {**UNBOUNDED, f"{W0}.replicas": MAX_WORKER_PODS}, None, None, id="replicas-at-ceiling"
        ),
        pytest.param(
            {**UNBOUNDED, f"{W0}.replicas": MAX_WORKER_PODS + 1},
            f"{W0}.replicas",
            f"replicas of worker group 'workers' is {MAX_WORKER_PODS + 1}; at most",
            id="replicas",
        ),
        pytest.param(
            {f"{W0}.replicas": INT32_MAX},
            f"{W0}.replicas",
            f"is {INT32_MAX}; at most {MAX_WORKER_PODS} is accepted",
            id="replicas-int32-clamped-by-max",
        ),
        pytest.param(
            {**UNBOUNDED, f"{W0}.minReplicas": MAX_WORKER_PODS + 1},
            f"{W0}.minReplicas",
            "minReplicas of worker group 'workers'",
            id="min-replicas",
        ),
        pytest.param(
            {f"{W0}.maxReplicas": MAX_WORKER_PODS + 1},
            f"{W0}.maxReplicas",
            "maxReplicas of worker group 'workers'",
            id="max-replicas",
        ),
        pytest.param({f"{W0}.maxReplicas": INT32_MAX}, None, None, id="max-replicas-crd-default"),
        pytest.param(
            {f"{W0}.numOfHosts": MAX_HOSTS + 1},
            f"{W0}.numOfHosts",
            "numOfHosts of worker group 'workers'",
            id="hosts",
        ),
        pytest.param(
            {f"{W0}.replicas": 1, f"{W0}.numOfHosts": MAX_HOSTS}, None, None, id="hosts-at-ceiling"
        ),
        pytest.param(
            {**UNBOUNDED, f"{W0}.replicas": 11, f"{W0}.numOfHosts": MAX_HOSTS},
            f"{W0}.replicas",
            f"asks for {11 * MAX_HOSTS} pods (11 replicas of {MAX_HOSTS} hosts)",
            id="replicas-times-hosts",
        ),
        pytest.param(
            {
                **UNBOUNDED,
                f"{W0}.replicas": 0,
                f"{W0}.minReplicas": 20,
                f"{W0}.numOfHosts": 600,
            },
            f"{W0}.replicas",
            "asks for 12000 pods (20 replicas of 600 hosts)",
            id="min-replicas-times-hosts",
        ),
        pytest.param(
            {**UNBOUNDED, f"{W0}.replicas": MAX_WORKER_PODS + 1, f"{W0}.suspend": True},
            f"{W0}.replicas",
            "at most",
            id="suspended-group-counts",
        ),
        pytest.param(
            {**_groups(2, maxReplicas=INT32_MAX, replicas=MAX_WORKER_PODS // 2)},
            None,
            None,
            id="cluster-at-ceiling",
        ),
        pytest.param(
            {**_groups(2, maxReplicas=INT32_MAX, replicas=MAX_WORKER_PODS // 2 + 1)},
            "spec.workerGroupSpecs",
            f"ask for {MAX_WORKER_PODS + 2} pods together; at most {MAX_WORKER_PODS} worker pods",
            id="cluster-total",
        ),
        pytest.param(
            {
                **_groups(2, maxReplicas=INT32_MAX, replicas=MAX_WORKER_PODS),
                f"{W1}.replicas": MAX_WORKER_PODS + 1,
            },
            f"{W1}.replicas",
            "replicas of worker group 'g1'",
            id="a-group-error-is-not-repeated-for-the-total",
        ),
        pytest.param(_groups(MAX_WORKER_GROUPS, replicas=0), None, None, id="groups-at-ceiling"),
        pytest.param(
            _groups(MAX_WORKER_GROUPS + 1, replicas=0),
            "spec.workerGroupSpecs",
            f"{MAX_WORKER_GROUPS + 1} worker groups; at most {MAX_WORKER_GROUPS} are accepted",
            id="groups",
        ),
    ],
)
def test_raycluster_sizes(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            edited(rayjob(), {"spec.rayClusterSpec.workerGroupSpecs[0].replicas": INT32_MAX}),
            "spec.rayClusterSpec.workerGroupSpecs[0].replicas",
            id="rayjob",
        ),
        pytest.param(
            edited(rayservice(), {"spec.rayClusterConfig.workerGroupSpecs[0].numOfHosts": 10**6}),
            "spec.rayClusterConfig.workerGroupSpecs[0].numOfHosts",
            id="rayservice",
        ),
        pytest.param(
            edited(
                raycronjob(),
                {"spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].replicas": INT32_MAX},
            ),
            "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[0].replicas",
            id="raycronjob",
        ),
    ],
)
def test_every_kind_that_carries_a_cluster_spec_is_held_to_them(
    doc: dict[str, Any], expected: str
) -> None:
    check(doc, expected, "at most")


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param({}, False, id="small"),
        pytest.param({f"{W0}.replicas": INT32_MAX, **UNBOUNDED}, True, id="replicas"),
        pytest.param(_groups(MAX_WORKER_GROUPS + 1, replicas=0), True, id="groups"),
    ],
)
def test_oversized_tells_a_spec_validation_refuses_for_its_size(
    edits: Edits, expected: bool
) -> None:
    cluster = parse_ray_object(edited(raycluster(), edits))
    assert isinstance(cluster, RayCluster)
    assert oversized(cluster.spec) is expected
