"""RayClusterSpec rules: containers, replica bounds, group names, resources, upgrade strategy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.crds.test_validation_support import (
    DELETE,
    Edits,
    Expected,
    check,
    edited,
    raycluster,
    rayjob,
    rayservice,
)

W0 = "spec.workerGroupSpecs[0]"
HEAD = "spec.headGroupSpec"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({}, None, None, id="containers-ok"),
        pytest.param(
            {f"{HEAD}.template.spec.containers": []},
            f"{HEAD}.template.spec.containers",
            "at least one container",
            id="head-empty",
        ),
        pytest.param(
            {f"{W0}.template.spec.containers": []},
            f"{W0}.template.spec.containers",
            "worker group 'workers' must have at least one container",
            id="worker-empty",
        ),
    ],
)
def test_containers_present(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{W0}.minReplicas": 2, f"{W0}.maxReplicas": 2}, None, None, id="equal-ok"),
        pytest.param(
            {f"{W0}.minReplicas": DELETE, f"{W0}.maxReplicas": DELETE},
            None,
            None,
            id="crd-defaults-ok",
        ),
        pytest.param(
            {f"{W0}.minReplicas": 3, f"{W0}.maxReplicas": 2},
            f"{W0}.minReplicas",
            "minReplicas (3) must not exceed maxReplicas (2)",
            id="min-above-max",
        ),
        pytest.param(
            {f"{W0}.minReplicas": 5, f"{W0}.maxReplicas": DELETE}, None, None, id="max-defaulted"
        ),
        pytest.param(
            {f"{W0}.minReplicas": -1}, f"{W0}.minReplicas", "must not be negative", id="min-neg"
        ),
        pytest.param(
            {f"{W0}.minReplicas": 0, f"{W0}.maxReplicas": -1},
            (f"{W0}.maxReplicas", f"{W0}.minReplicas"),
            "maxReplicas",
            id="max-negative",
        ),
    ],
)
def test_replica_bounds(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


def _second_group(name: str) -> Edits:
    group = raycluster()["spec"]["workerGroupSpecs"][0] | {"groupName": name}
    return {"spec.workerGroupSpecs[1]": group}


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(_second_group("gpus"), None, None, id="distinct-ok"),
        pytest.param(
            _second_group("workers"),
            "spec.workerGroupSpecs[1].groupName",
            "already used by workerGroupSpecs[0]",
            id="duplicate",
        ),
    ],
)
def test_unique_group_names(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{HEAD}.resources": {"CPU": "2"}}, None, None, id="top-level-only-ok"),
        pytest.param({f'{W0}.rayStartParams["num-cpus"]': "2"}, None, None, id="params-only-ok"),
        pytest.param(
            {f'{HEAD}.rayStartParams["num-gpus"]': "1", f"{HEAD}.resources": {"GPU": "1"}},
            f"{HEAD}.resources",
            "both in rayStartParams (num-gpus)",
            id="head-both",
        ),
        pytest.param(
            {f"{W0}.rayStartParams.memory": "1000", f"{W0}.resources": {"CPU": "1"}},
            f"{W0}.resources",
            "use only one of them",
            id="worker-both",
        ),
    ],
)
def test_group_resources_in_one_place(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{W0}.labels": {"zone": "a"}}, None, None, id="labels-field-ok"),
        pytest.param(
            {f"{W0}.rayStartParams.labels": "zone=a"},
            f"{W0}.rayStartParams[labels]",
            "use the top-level labels field",
            id="labels-in-params",
        ),
    ],
)
def test_labels_not_in_start_params(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


_ORIGIN = 'metadata.labels["ray.io/originated-from-crd"]'


@pytest.mark.parametrize(
    ("doc", "expected", "phrase"),
    [
        pytest.param(
            edited(raycluster(), {"spec.upgradeStrategy.type": "Recreate"}), None, None, id="user"
        ),
        pytest.param(
            edited(raycluster(), {"spec.upgradeStrategy.type": "None", _ORIGIN: "RayJob"}),
            "spec.upgradeStrategy.type",
            "created by a RayJob",
            id="cluster-of-rayjob",
        ),
        pytest.param(
            edited(rayservice(), {"spec.rayClusterConfig.upgradeStrategy.type": "Recreate"}),
            "spec.rayClusterConfig.upgradeStrategy.type",
            "created by a RayService",
            id="embedded-in-rayservice",
        ),
    ],
)
def test_upgrade_strategy_owner(doc: Edits, expected: Expected, phrase: str | None) -> None:
    check(doc, expected, phrase)


def _conditions(*types: str) -> Edits:
    stamp = "2026-01-01T00:00:00Z"
    conditions = [
        {"type": t, "status": "True", "reason": "R", "lastTransitionTime": stamp} for t in types
    ]
    return {"status.conditions": conditions}


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(_conditions("RayClusterSuspending"), None, id="suspending-ok"),
        pytest.param(
            _conditions("RayClusterSuspending", "RayClusterSuspended"),
            "status.conditions",
            id="both-true",
        ),
    ],
)
def test_suspend_conditions(edits: Edits, expected: Expected) -> None:
    check(edited(raycluster(), edits), expected, None)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(rayjob(), None, id="rayjob-ok"),
        pytest.param(
            edited(rayjob(), {"spec.rayClusterSpec.workerGroupSpecs[0].minReplicas": 9}),
            "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas",
            id="rayjob-prefix",
        ),
        pytest.param(rayservice(), None, id="rayservice-ok"),
        pytest.param(
            edited(
                rayservice(), {"spec.rayClusterConfig.headGroupSpec.template.spec.containers": []}
            ),
            "spec.rayClusterConfig.headGroupSpec.template.spec.containers",
            id="rayservice-prefix",
        ),
    ],
)
def test_embedded_specs_use_their_path(doc: Edits, expected: Expected) -> None:
    check(doc, expected, None)


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        pytest.param(raycluster(), "spec.rayVersion", id="raycluster"),
        pytest.param(rayjob(), "spec.rayClusterSpec.rayVersion", id="rayjob"),
        pytest.param(rayservice(), "spec.rayClusterConfig.rayVersion", id="rayservice"),
    ],
)
def test_ray_version_is_bounded(doc: dict[str, Any], path: str) -> None:
    prefix = path.removesuffix(".rayVersion")
    check(edited(doc, {path: "2." + "5" * 62}), None, None)
    check(edited(doc, {path: "2." + "5" * 63}), path, "at most 64 characters (got 65)")
    # A feature that needs a version says why too, at the same field.
    long_token = {path: "1" * 40_000 + "\n", f"{prefix}.authOptions.mode": "token"}
    check(edited(doc, long_token), (path, path), "rayVersion")
