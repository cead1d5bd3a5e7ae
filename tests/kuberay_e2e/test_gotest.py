"""Reading `go test -v` output: every test's and subtest's outcome, timeouts included."""

from __future__ import annotations

from tests.kuberay_e2e.gotest import Outcome, Result, results

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
