"""What the worker's copies of CRs keep."""

from __future__ import annotations

from activities.registry import cr_essentials
from crds.constants import ANNOTATION_LAST_APPLIED


def test_a_copied_cr_keeps_all_but_managed_fields_and_the_last_applied_manifest() -> None:
    obj = {
        "metadata": {
            "name": "c",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {ANNOTATION_LAST_APPLIED: '{"spec": "..."}', "team": "a"},
        },
        "spec": {"suspend": True},
    }
    assert cr_essentials(obj) == {
        "metadata": {"name": "c", "annotations": {"team": "a"}},
        "spec": {"suspend": True},
    }
    assert "managedFields" in obj["metadata"]  # the original is left as it was
