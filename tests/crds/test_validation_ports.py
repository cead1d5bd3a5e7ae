"""Container ports: every `containerPort` the controller may read is a port number."""

from __future__ import annotations

from typing import Any

import pytest

from tests.crds.test_validation_support import Expected, check, edited, raycluster, rayjob

HEAD = "spec.headGroupSpec.template.spec.containers[0]"
W0 = "spec.workerGroupSpecs[0].template.spec.containers[0]"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(
            {f"{HEAD}.ports": [{"name": "dashboard", "containerPort": 8265}]},
            None,
            None,
            id="valid",
        ),
        pytest.param(
            {f"{HEAD}.ports": [{"name": "dashboard", "containerPort": "abc"}]},
            f"{HEAD}.ports[0].containerPort",
            "from 1 to 65535 (got 'abc')",
            id="a-string",
        ),
        pytest.param(
            {f"{HEAD}.ports": [{"name": "x", "containerPort": 1}, {"containerPort": 10**30}]},
            f"{HEAD}.ports[1].containerPort",
            "from 1 to 65535",
            id="too-large",
        ),
        pytest.param(
            {f"{HEAD}.ports": [{"name": "x", "containerPort": 0}]},
            f"{HEAD}.ports[0].containerPort",
            "from 1 to 65535",
            id="zero",
        ),
        pytest.param(
            {f"{HEAD}.ports": [{"name": "x", "containerPort": 8265.0}]},
            f"{HEAD}.ports[0].containerPort",
            "(got 8265.0)",
            id="a-float",
        ),
        pytest.param(
            {f"{HEAD}.ports": [{"name": "x"}]},
            f"{HEAD}.ports[0].containerPort",
            "(got nothing)",
            id="missing",
        ),
        pytest.param({f"{W0}.ports": "8000"}, f"{W0}.ports", "must be a list", id="not-a-list"),
        pytest.param(
            {f"{W0}.ports": ["8000"]},
            f"{W0}.ports[0].containerPort",
            "(got nothing)",
            id="not-an-object",
        ),
    ],
)
def test_container_ports(edits: dict[str, Any], expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


def test_the_submitter_template_is_checked_too() -> None:
    container = {"name": "s", "image": "i", "ports": [{"containerPort": "http"}]}
    edits = {"spec.submitterPodTemplate.spec.containers": [container]}
    path = "spec.submitterPodTemplate.spec.containers[0].ports[0].containerPort"
    check(edited(rayjob(), edits), path, "from 1 to 65535")
