"""KubeRay's own end-to-end tests, run with `go test` against our operator.

Each case is one top-level test function of one of KubeRay's e2e packages, run with its
subtests (all, or those `only` selects or `skip` leaves out); `outcomes.py` says how each
ends against us and, for every subtest that does not pass, why. A case fails when the tests
that did not pass differ from that account in either direction: a fix that makes a listed
failure pass updates the account too.

CI runs the cases marked `ci`; the full set is one command (it takes hours here):
`KUBERAY_TEMPORAL_KUBERAY_E2E=all .venv/bin/pytest tests/kuberay_e2e -rA`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from devcluster.control_plane.building import KUBERAY_SUBMITTER, Build, build
from kuberay_temporal.binaries import kubectl
from tests.e2e.conftest import LocalStack
from tests.kuberay_e2e.gotest import Outcome, package_dir, results, run_test
from tests.kuberay_e2e.outcomes import CASES, Case

pytestmark = [pytest.mark.slow, pytest.mark.kubernetes]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.timeout(case.minutes * 60 + 120)]
            + ([] if case.ci else [pytest.mark.full_set]),
        )
        for case in CASES
    ],
)
async def test_kuberay_e2e(case: Case, stack: LocalStack, binaries: Build, tmp_path: Path) -> None:
    # The submitter stands in for the `kuberay/submitter` image some tests' pods run.
    names = (case.binary, KUBERAY_SUBMITTER)
    await asyncio.to_thread(build, binaries, quiet=True, names=names)

    output = await run_test(
        binaries.path(case.binary),
        case.run,
        skip=case.skip,
        kubeconfig=stack.kubeconfig,
        output_dir=tmp_path,
        deadline=f"{case.minutes}m",
        path_prefix=kubectl().parent,
        workdir=package_dir(binaries, case.package),
        env=case.env,
    )

    (tmp_path / "go-test.log").write_text(output)  # all of it; a failure shows its end
    reported = results(output)
    assert case.name in reported, f"{case.name} reported nothing:\n{output[-4000:]}"
    not_passed = {
        name: result.outcome
        for name, result in reported.items()
        if result.outcome is not Outcome.PASS
    }
    expected = {name: outcome for name, (outcome, _) in case.accounted.items()}
    assert not_passed == expected, output[-8000:]
