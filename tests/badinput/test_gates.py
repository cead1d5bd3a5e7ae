"""Properties of the two gates a ray.io object passes: the CRD schema and our validation.

(a) validation never raises, whatever the input, and every rejection names a field path;
(b) model loading succeeds or raises pydantic's ValidationError, nothing else;
(c) an object broken by a known mutation is rejected by the API server (CRD schema, metadata
    rules; with our CRDs or KubeRay's installed) or by our validation, and the rejection names
    the broken field; valid objects pass both, and what passes both never asks for a negative
    number of pods.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pydantic
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from crds.loading import KIND_MODELS
from crds.raycluster import RayCluster
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob
from crds.rayservice import RayService
from crds.replicas import desired_pods, desired_worker_pods
from tests.badinput.budget import PURE
from tests.badinput.objects import CRD_DIRS, KINDS, admit, our_verdict, path_matches
from tests.badinput.strategies import (
    Broken,
    broken_objects,
    fuzzed_objects,
    json_values,
    valid_objects,
)

# A field path as violations print it: JSON names joined by dots, list indexes and map keys in
# brackets (`spec.workerGroupSpecs[0].labels[ray.io/x]`); "<root>" only for a non-object.
# A map key or an unknown field is printed as given, newlines included.
_PATH = re.compile(r"(apiVersion|kind|metadata|spec|status)([.\[].*)?", re.DOTALL)

CRDS = sorted(CRD_DIRS)

ANY_INPUT = st.one_of(
    json_values(),
    st.fixed_dictionaries(
        {"apiVersion": st.just("ray.io/v1"), "kind": st.sampled_from(KINDS)},
        optional={"metadata": json_values(10), "spec": json_values(30), "status": json_values(10)},
    ),
    fuzzed_objects(),
)


@PURE
@given(ANY_INPUT)
def test_validation_never_raises_and_names_a_path(doc: Any) -> None:
    violations = our_verdict(doc)
    for violation in violations:
        assert violation.message
        if isinstance(doc, dict):
            assert _PATH.fullmatch(violation.path), violation
        else:
            assert violation.path == "<root>"


@PURE
@given(ANY_INPUT, st.sampled_from(sorted(KIND_MODELS)))
def test_model_loading_succeeds_or_raises_validation_error(doc: Any, kind: str) -> None:
    # Anything but a ValidationError propagates and fails the test.
    with contextlib.suppress(pydantic.ValidationError):
        KIND_MODELS[kind].model_validate(doc)


@pytest.mark.parametrize("crds", CRDS)
def test_a_broken_object_is_rejected_by_a_gate_naming_the_field(crds: str) -> None:
    @PURE
    @given(broken_objects())
    def check(broken: Broken) -> None:
        admission = admit(broken.doc, crds)
        ours = [v.path for v in our_verdict(admission.stored)]
        named = [p for p in admission.causes + ours if path_matches(p, broken.expected)]
        assert named, (
            f"{broken.mutation}: nothing names {broken.expected}; "
            f"API server ({crds} CRDs): {admission.causes}, ours: {ours}"
        )

    check()


@pytest.mark.parametrize("crds", CRDS)
@pytest.mark.parametrize("kind", KINDS)
def test_valid_objects_pass_both_gates(kind: str, crds: str) -> None:
    @PURE
    @given(valid_objects(kind))
    def check(doc: dict[str, Any]) -> None:
        admission = admit(doc, crds)
        assert admission.causes == []
        assert our_verdict(admission.stored) == []

    check()


_MINIMAL_SPEC = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray"}]}}}}


@PURE
@given(st.one_of(broken_objects(), fuzzed_objects()))
# Regressions: devcluster's name and label checks raised on metadata of the wrong type.
@example(
    {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": 1},
        "spec": _MINIMAL_SPEC,
    }
)
@example(
    {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c", "labels": [None]},
        "spec": _MINIMAL_SPEC,
    }
)
def test_what_passes_both_gates_never_wants_negative_pods(doc: Any) -> None:
    if isinstance(doc, Broken):
        doc = doc.doc
    admission = admit(doc)
    if admission.rejected or our_verdict(admission.stored):
        return
    obj = KIND_MODELS[admission.stored["kind"]].model_validate(admission.stored)
    spec = _cluster_spec(obj)
    if spec is None:
        return
    assert desired_worker_pods(spec) >= 0
    for group in spec.worker_group_specs or []:
        assert desired_pods(group) >= 0


def _cluster_spec(obj: Any) -> Any:
    if isinstance(obj, RayCluster):
        return obj.spec
    if isinstance(obj, RayJob):
        return obj.spec.ray_cluster_spec
    if isinstance(obj, RayCronJob):
        return obj.spec.job_template.ray_cluster_spec
    assert isinstance(obj, RayService)
    return obj.spec.ray_cluster_config
