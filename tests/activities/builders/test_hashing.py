from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from activities.builders import recreate_hash
from tests.activities.builders.fixtures import cluster, instance_dict
from tests.reference import REPO_ROOT

Edit = Callable[[dict[str, Any]], None]


def _group(data: dict[str, Any]) -> dict[str, Any]:
    return data["spec"]["workerGroupSpecs"][0]  # type: ignore[no-any-return]


def _hash(edit: Edit | None = None) -> str:
    data = instance_dict()
    if edit is not None:
        edit(data)
    return recreate_hash(cluster(data).spec)


def test_hash_shape() -> None:
    value = _hash()
    assert len(value) == 32
    assert set(value) <= set("0123456789ABCDEFGHIJKLMNOPQRSTUV")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: _group(d).update(replicas=7), id="replicas"),
        pytest.param(lambda d: _group(d).update(minReplicas=2, maxReplicas=9), id="min-max"),
        pytest.param(
            lambda d: _group(d).update(scaleStrategy={"workersToDelete": ["p1"]}),
            id="workers-to-delete",
        ),
        pytest.param(
            lambda d: _group(d)["template"]["spec"].update(
                tolerations=[{"key": "k", "operator": "Exists"}]
            ),
            id="worker-tolerations",
        ),
        pytest.param(
            lambda d: d["spec"]["headGroupSpec"]["template"]["spec"].update(
                schedulingGates=[{"name": "kueue"}]
            ),
            id="head-scheduling-gates",
        ),
        pytest.param(
            lambda d: d["spec"].update(upgradeStrategy={"type": "Recreate"}), id="upgrade-strategy"
        ),
    ],
)
def test_ignored_fields(edit: Edit) -> None:
    assert _hash(edit) == _hash()


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            lambda d: _group(d)["template"]["spec"]["containers"][0].update(image="new"),
            id="worker-image",
        ),
        pytest.param(
            lambda d: d["spec"]["headGroupSpec"]["rayStartParams"].update(x="y"), id="head-params"
        ),
        pytest.param(lambda d: d["spec"].update(enableInTreeAutoscaling=True), id="autoscaling"),
        pytest.param(lambda d: _group(d).update(numOfHosts=2), id="num-of-hosts"),
    ],
)
def test_template_changes_change_the_hash(edit: Edit) -> None:
    assert _hash(edit) != _hash()


def test_stable_across_processes() -> None:
    # PYTHONHASHSEED differs per process; the hash must not.
    code = (
        "from activities.builders import recreate_hash;"
        "from tests.activities.builders.fixtures import cluster;"
        "print(recreate_hash(cluster().spec))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
        cwd=REPO_ROOT,
    )
    assert out.stdout.strip() == _hash()
