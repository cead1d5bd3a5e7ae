"""Every CR workflow answers the same signals and query, from the one shared base."""

from __future__ import annotations

import pytest
from temporalio.workflow import _Definition

from workflows import messages
from workflows.entity import CrWorkflow
from workflows.raycluster.workflow import RayClusterWorkflow
from workflows.rayjob.workflow import RayJobWorkflow
from workflows.rayservice.workflow import RayServiceWorkflow

SHARED = {
    messages.SPEC_CHANGED,
    messages.OWNED_CHANGED,
    messages.DELETED,
    messages.SUSPEND,
    messages.RESUME,
}


@pytest.mark.parametrize("cls", [RayClusterWorkflow, RayJobWorkflow, RayServiceWorkflow])
def test_each_kind_has_the_shared_signals_and_query_from_the_base(cls: type) -> None:
    definition = _Definition.must_from_class(cls)
    assert set(definition.signals) >= SHARED
    assert messages.PROGRESS in definition.queries
    for name in SHARED:  # defined once, on the base, not again per kind
        handler = definition.signals[name].fn
        assert handler.__qualname__.startswith(CrWorkflow.__name__ + "."), name


def test_only_the_rayservice_takes_a_rollback() -> None:
    signals = {
        cls: set(_Definition.must_from_class(cls).signals)
        for cls in (RayClusterWorkflow, RayJobWorkflow, RayServiceWorkflow)
    }
    assert [c for c, names in signals.items() if messages.ROLLBACK in names] == [RayServiceWorkflow]
