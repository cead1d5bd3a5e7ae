"""Reading `go test -v` output: every test's and subtest's outcome, timeouts included."""

from __future__ import annotations

from devcluster.control_plane.building import KUBERAY_E2E_PACKAGES
from tests.kuberay_e2e.gotest import Outcome, Result, results
from tests.kuberay_e2e.outcomes import CASES
from tests.reference import REPO_ROOT

PASSED_AND_SKIPPED = """\
=== RUN   TestRayClusterManagedBy
=== RUN   TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue
    raycluster_test.go:52: Created RayCluster test-ns-k8fn4/raycluster-skip successfully
--- PASS: TestRayClusterManagedBy (0.03s)
    --- PASS: TestRayClusterManagedBy/Failed_creation_of_cluster (0.02s)
    --- SKIP: TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue (3.03s)
PASS
"""

TIMED_OUT = """\
=== RUN   TestRayJob
=== RUN   TestRayJob/Successful_RayJob
    --- PASS: TestRayJob/Successful_RayJob (12.50s)
=== RUN   TestRayJob/Failing_RayJob
panic: test timed out after 30m0s
\trunning tests:
\t\tTestRayJob (29m59s)
\t\tTestRayJob/Failing_RayJob (29m47s)

goroutine 1 [running]:
"""


def test_every_test_and_subtest_is_read_with_its_outcome_and_time() -> None:
    found = results(PASSED_AND_SKIPPED)

    assert found == {
        "TestRayClusterManagedBy": Result("TestRayClusterManagedBy", Outcome.PASS, 0.03),
        "TestRayClusterManagedBy/Failed_creation_of_cluster": Result(
            "TestRayClusterManagedBy/Failed_creation_of_cluster", Outcome.PASS, 0.02
        ),
        "TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue": Result(
            "TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue",
            Outcome.SKIP,
            3.03,
        ),
    }


def test_what_was_running_at_the_deadline_failed() -> None:
    found = results(TIMED_OUT)

    assert {name: result.outcome for name, result in found.items()} == {
        "TestRayJob/Successful_RayJob": Outcome.PASS,
        "TestRayJob": Outcome.FAIL,
        "TestRayJob/Failing_RayJob": Outcome.FAIL,
    }


def test_make_test_builds_the_binaries_of_the_cases_it_runs_and_no_more() -> None:
    """`make test` builds KubeRay's e2e binaries beside the quick tests; each is minutes of CPU
    on two cores, so only those of the CI cases (the others are built on first use)."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    (line,) = [ln for ln in makefile.splitlines() if ln.startswith("E2E_PACKAGES :=")]
    built = set(line.split(":=", 1)[1].split())
    assert built == {case.package for case in CASES if case.ci}
    assert built <= set(KUBERAY_E2E_PACKAGES)
