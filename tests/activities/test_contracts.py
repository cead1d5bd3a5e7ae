"""Every activity the worker registers keeps the types its `ActivityRef` promises workflows.

Workflows call activities by reference (`workflows.activity_calls`), so mypy holds each call
to the reference's input and result types; this holds each implementation to its reference,
which closes the loop: a changed signature on either side fails here.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, cast

import pytest
from temporalio.activity import _Definition

from activities import contract
from activities.contract import ActivityRef
from activities.dashboard import contract as dashboard_contract
from activities.kube.client import KubeClient
from activities.raycluster import contract as cluster_contract
from activities.raycronjob import contract as cronjob_contract
from activities.rayjob import contract as job_contract
from activities.rayservice import contract as service_contract
from activities.registry import build_activities

CONTRACTS = (
    contract,
    dashboard_contract,
    cluster_contract,
    job_contract,
    service_contract,
    cronjob_contract,
)


def _references() -> dict[str, ActivityRef[Any, Any]]:
    found: dict[str, ActivityRef[Any, Any]] = {}
    for module in CONTRACTS:
        for value in vars(module).values():
            if isinstance(value, ActivityRef):
                assert found.get(value.name, value) is value, f"{value.name} defined twice"
                found[value.name] = value
    return found


def _registered() -> dict[str, Callable[..., Any]]:
    # Building binds the activities to a client; none of them is called here.
    activities = build_activities(cast(KubeClient, object()))
    return {_Definition.must_from_callable(fn).name: fn for fn in activities}


REFERENCES = _references()
REGISTERED = _registered()


def test_every_reference_is_registered_and_every_activity_has_one() -> None:
    assert set(REFERENCES) == set(REGISTERED)


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_an_activity_takes_and_returns_what_its_reference_says(name: str) -> None:
    fn, ref = REGISTERED[name], REFERENCES[name]
    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert len(params) == 1, f"{name} takes one input"
    assert hints[params[0]] is ref.input
    assert hints["return"] is ref.result
