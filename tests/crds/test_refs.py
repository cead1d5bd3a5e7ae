"""Workflow ids name their CR's kind in KubeRay's spelling, for every kind with a workflow."""

from __future__ import annotations

import pytest

from crds.constants import KINDS
from crds.loading import KIND_MODELS
from crds.refs import ObjectRef


def test_every_kind_the_models_load_has_a_workflow() -> None:
    assert set(KINDS) == set(KIND_MODELS)


@pytest.mark.parametrize("kind", KINDS)
def test_a_workflow_id_gives_back_its_ref(kind: str) -> None:
    ref = ObjectRef(kind=kind, namespace="ml", name="nightly", uid="6f1c")
    assert ref.workflow_id == f"{kind.lower()}/ml/nightly/6f1c"
    assert ObjectRef.from_workflow_id(ref.workflow_id) == ref


def test_raycronjob_workflow_id() -> None:
    ref = ObjectRef.from_workflow_id("raycronjob/default/nightly/6f1c")
    assert (ref.kind, str(ref)) == ("RayCronJob", "RayCronJob default/nightly")
