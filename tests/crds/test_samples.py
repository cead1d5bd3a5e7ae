"""Our own samples are valid and cover every submission mode."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crds.enums import JobSubmissionMode
from crds.loading import is_ray_object, parse_ray_object
from crds.rayjob import RayJob
from crds.validation import validate
from tests.reference import REPO_ROOT

OUR_SAMPLES = sorted((REPO_ROOT / "samples").glob("*.yaml"))


@pytest.mark.parametrize("path", OUR_SAMPLES, ids=lambda p: p.name)
def test_sample_is_valid(path: Path) -> None:
    objects = [
        parse_ray_object(d) for d in yaml.safe_load_all(path.read_text()) if is_ray_object(d)
    ]
    assert objects, f"{path.name} holds no ray.io object"
    for obj in objects:
        assert validate(obj) == []


def test_one_rayjob_sample_per_submission_mode() -> None:
    modes = set()
    for path in OUR_SAMPLES:
        for doc in yaml.safe_load_all(path.read_text()):
            obj = parse_ray_object(doc) if is_ray_object(doc) else None
            if isinstance(obj, RayJob):
                modes.add(obj.spec.submission_mode)
    assert modes == set(JobSubmissionMode)
