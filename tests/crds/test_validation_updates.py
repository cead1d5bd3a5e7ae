"""Update rules: immutable managedBy and GCS fault-tolerance backend."""

from __future__ import annotations

from typing import Any

import pytest

from crds.loading import parse_ray_object
from crds.validation import validate_update
from tests.crds.test_validation_support import (
    Edits,
    Expected,
    edited,
    raycluster,
    raycronjob,
    rayjob,
)

KUEUE = "kueue.x-k8s.io/multikueue"
KUBERAY = "ray.io/kuberay-operator"
CRON_CLUSTER = "spec.jobTemplate.rayClusterSpec"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(rayjob(), rayjob(), None, id="unchanged-ok"),
        pytest.param(
            edited(rayjob(), {"spec.managedBy": KUBERAY}),
            edited(rayjob(), {"spec.managedBy": KUEUE}),
            "spec.managedBy",
            id="rayjob-managed-by",
        ),
        pytest.param(
            rayjob(), edited(rayjob(), {"spec.managedBy": KUEUE}), None, id="newly-set-ok"
        ),
        pytest.param(
            edited(raycluster(), {"spec.managedBy": KUEUE}),
            edited(raycluster(), {"spec.managedBy": KUBERAY}),
            "spec.managedBy",
            id="raycluster-managed-by",
        ),
        pytest.param(
            edited(raycluster(), {"spec.gcsFaultToleranceOptions.backend": "redis"}),
            edited(raycluster(), {"spec.gcsFaultToleranceOptions.backend": "rocksdb"}),
            "spec.gcsFaultToleranceOptions.backend",
            id="backend",
        ),
        pytest.param(
            rayjob(),
            edited(rayjob(), {"spec.rayClusterSpec.gcsFaultToleranceOptions.backend": "rocksdb"}),
            None,
            id="backend-newly-set-ok",
        ),
        pytest.param(
            edited(rayjob(), {"spec.submissionMode": "HTTPMode"}),
            edited(rayjob(), {"spec.submissionMode": "K8sJobMode"}),
            None,
            id="submission-mode-may-change",
        ),
        pytest.param(raycluster(), rayjob(), "kind", id="kind"),
        pytest.param(
            edited(raycronjob(), {"spec.jobTemplate.managedBy": KUBERAY}),
            edited(raycronjob(), {"spec.jobTemplate.managedBy": KUEUE}),
            "spec.jobTemplate.managedBy",
            id="raycronjob-template-managed-by",
        ),
        pytest.param(
            edited(raycronjob(), {f"{CRON_CLUSTER}.gcsFaultToleranceOptions.backend": "redis"}),
            edited(raycronjob(), {f"{CRON_CLUSTER}.gcsFaultToleranceOptions.backend": "rocksdb"}),
            f"{CRON_CLUSTER}.gcsFaultToleranceOptions.backend",
            id="raycronjob-template-backend",
        ),
        pytest.param(
            raycronjob(),
            edited(raycronjob(), {"spec.schedule": "@hourly", "spec.suspend": True}),
            None,
            id="raycronjob-schedule-may-change",
        ),
    ],
)
def test_immutable_fields(old: dict[str, Any], new: Edits, expected: Expected) -> None:
    found = validate_update(parse_ray_object(old), parse_ray_object(new))
    assert [v.path for v in found] == ([] if expected is None else [expected]), found
    assert all("immutable" in v.message or "kind" in v.message for v in found)
