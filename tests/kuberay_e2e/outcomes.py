"""How each of KubeRay's e2e tests ends against our operator, and why where it does not pass.

One `Case` per top-level test function of the packages `building.KUBERAY_E2E_PACKAGES` names,
as those packages were at v1.5.0 (the tests v1.6-v1.7 added are not listed yet; the binaries
are built from v1.7.0's source). A test or subtest that fails or skips is listed with its
reason: ours (then it is a bug to fix, and it is not listed for long) or not ours (what it
needs that this machine or the KubeRay version does not give).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tests.kuberay_e2e.gotest import Outcome


@dataclass(frozen=True)
class Case:
    """One of KubeRay's test functions, with every subtest that does not pass against us."""

    package: str
    name: str
    only: str = ""
    """A `-test.run` pattern for its subtests (all when empty)."""
    skip: str = ""
    """A `-test.skip` pattern for its subtests: one whose failure would stop those after it
    (a subtest failing through its parent's assertions ends the parent), run as a case of its
    own with `only`."""
    minutes: int = 10
    """The deadline of the test binary (`-test.timeout`), as KubeRay's CI gives its package."""
    ci: bool = False
    """Part of the subset CI runs."""
    fails: Mapping[str, str] = field(default_factory=dict)
    """Subtest (its name below the test's; "" the test itself) -> why it fails."""
    skips: Mapping[str, str] = field(default_factory=dict)
    """Subtest ("" the test itself) -> why it skips."""

    @property
    def id(self) -> str:
        """The case's name in pytest's report."""
        return ".".join(part for part in (self.package, self.name, self.only) if part)

    @property
    def run(self) -> str:
        """The binary's `-test.run` pattern."""
        return f"^{self.name}$/{self.only}" if self.only else f"^{self.name}$"

    @property
    def binary(self) -> str:
        """The test binary's name in the build cache."""
        return f"kuberay-{self.package}.test"

    @property
    def accounted(self) -> dict[str, tuple[Outcome, str]]:
        """Every test or subtest expected not to pass, by full name: (outcome, reason)."""
        found: dict[str, tuple[Outcome, str]] = {}
        for outcomes, outcome in ((self.skips, Outcome.SKIP), (self.fails, Outcome.FAIL)):
            for sub, why in outcomes.items():
                found[self._full(sub)] = (outcome, why)
        if self.fails:
            # Go fails a test when one of its subtests fails.
            found.setdefault(self.name, (Outcome.FAIL, "a subtest fails"))
        return found

    def _full(self, sub: str) -> str:
        return f"{self.name}/{sub}" if sub else self.name


_NO_GITHUB = (
    "not ours: its Serve apps' working_dir is a zip of GitHub's ray-project/{repo}, and this "
    "machine resolves no GitHub host: the apps end DEPLOY_FAILED (RuntimeEnvSetupError, "
    "\"Failed to resolve 'github.com'\") and the RayService never becomes Ready"
)

_SERVE_APPS_FROM_GITHUB = {
    "serve_workloads": (
        "TestStaticRayService",
        "TestAutoscalingRayService",
        "TestRayServiceZeroDowntimeUpgrade",
        "TestRayServiceGCSFaultTolerance",
        "TestRayServiceRayClusterDeletionDelaySeconds",
    ),
    "test_dag": (
        "TestRayServiceInPlaceUpdate",
        "TestUpdateServeConfigAndRayClusterSpec",
        "TestUpdateServeConfigAndRayClusterSpecWithUpgradeDisabled",
        "TestRayServiceBecomesReadyBeforeTimeout",
        "TestRedeployRayServe",
        "TestOldHeadPodFailDuringUpgrade",
    ),
}
"""e2erayservice's tests by the GitHub repository their Serve apps come from."""

CASES: tuple[Case, ...] = (
    # e2e: RayCluster basics.
    Case("e2e", "TestRayClusterGCSFaultTolerance"),
    Case("e2e", "TestGcsFaultToleranceOptions", minutes=15),
    Case("e2e", "TestGcsFaultToleranceAnnotations"),
    Case("e2e", "TestRayClusterSingleHostMultiSlice"),
    Case("e2e", "TestRayClusterMultiHostMultiSlice"),
    Case("e2e", "TestRayClusterManagedBy", ci=True),
    Case("e2e", "TestRayClusterSuspend", ci=True),
    Case("e2e", "TestRayClusterWithResourceQuota"),
    Case("e2e", "TestRayClusterScalingDown"),
    # e2erayjob
    Case("e2erayjob", "TestRayJobWithClusterSelector"),
    Case("e2erayjob", "TestDeletionStrategy", minutes=15),
    Case("e2erayjob", "TestRayJobLightWeightMode"),
    Case("e2erayjob", "TestRayJobRecovery"),
    Case("e2erayjob", "TestRayJobRetry", minutes=15),
    Case("e2erayjob", "TestRayJobSidecarMode"),
    Case("e2erayjob", "TestRayJobSuspend"),
    Case(
        "e2erayjob",
        "TestRayJob",
        skip="TestRayJob/RayJob_(fails_when_head_Pod_is_deleted|has_exceed_SubmitterFinished)",
        minutes=20,
    ),
    Case(
        "e2erayjob",
        "TestRayJob",
        only="RayJob_fails_when_head_Pod_is_deleted_when_job_is_running",
        fails={
            "RayJob_fails_when_head_Pod_is_deleted_when_job_is_running": (
                "newer than v1.5.0: the head comes back empty, Ray no longer knows the job, and "
                "ours fails the RayJob at once with AppFailed, as v1.7 does (its test accepts "
                "AppFailed); v1.5.0 expected JobDeploymentStatusTransitionGracePeriodExceeded "
                "30 s after its submitter gave up"
            ),
        },
    ),
    Case(
        "e2erayjob",
        "TestRayJob",
        only="RayJob_has_exceed_SubmitterFinishedTimeout",
        fails={
            "RayJob_has_exceed_SubmitterFinishedTimeout": (
                "not ours: the test marks the submitter Job Complete by hand with a status "
                "Kubernetes 1.31 and later refuse (422: Complete=True without "
                "SuccessCriteriaMet=true, active 1 on a finished Job); v1.5.0's CI ran "
                "Kubernetes 1.25"
            ),
        },
    ),
    # e2erayjobsubmitter: passes, with KubeRay's submitter built from its module standing in for
    # the kuberay/submitter image, and pip runtime envs installed through the node's egress.
    Case("e2erayjobsubmitter", "TestRayJobSubmitter"),
    # e2erayservice: every test but the two that need no Serve app deploys one from GitHub.
    *(
        Case("e2erayservice", name, fails={"": _NO_GITHUB.format(repo=repo)})
        for repo, names in _SERVE_APPS_FROM_GITHUB.items()
        for name in names
    ),
    Case("e2erayservice", "TestRayServiceInitializingTimeoutTerminalFailure"),
    # e2eautoscaler: every test passes, autoscaler v1 and v2.
    Case("e2eautoscaler", "TestRayClusterAutoscalerV2IdleTimeout"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerGPUNodesForCPUTasks"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerDoNotRemoveIdlesForPlacementGroup"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerSDKRequestResources"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerAddNewWorkerGroup"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerPlacementGroup"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerGCSFT"),
    Case("e2eautoscaler", "TestRayClusterAutoscaler"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithFakeGPU"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithCustomResource"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithDesiredState"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerMinReplicasUpdate"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerMaxReplicasUpdate"),
    # sampleyaml: KubeRay's samples, applied with kubectl.
    Case(
        "sampleyaml",
        "TestRayCluster",
        minutes=30,
        fails={
            "ray-cluster.fluentbit.yaml": (
                "not ours: the node runs processes, not images, and no program on this machine "
                "stands in for fluent/fluent-bit (not in Debian or PyPI); the head's sidecar "
                "waits with CreateContainerConfigError"
            ),
        },
    ),
    # Both pass: four RayJob samples to Complete, their runtime envs pip-installed from PyPI.
    Case("sampleyaml", "TestRayJob"),
    Case("sampleyaml", "TestRayJobInteractiveMode", ci=True),
    Case(
        "sampleyaml",
        "TestRayService",
        fails={
            f"ray-service.{sample}.yaml": _NO_GITHUB.format(repo="test_dag")
            for sample in ("custom-serve-service", "different-port", "high-availability", "sample")
        },
    ),
)
