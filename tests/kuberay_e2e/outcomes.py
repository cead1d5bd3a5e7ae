"""How each of KubeRay's e2e tests ends against our operator, and why where it does not pass.

One `Case` per top-level test function of the packages `building.KUBERAY_E2E_PACKAGES` names,
as KubeRay v1.7.0 has them (its source builds the binaries); `NOT_APPLICABLE` names the one
package of v1.7.0 not run, and why. A test or subtest that fails or skips is listed with its
reason: ours (then it is a bug to fix, and it is not listed for long) or not ours (what it
needs that this machine does not give). `RECORDED` says which release's form of each test an
account was last recorded against.
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
    recorded: str = "v1.7.0"
    """The KubeRay release whose form of the test this account was recorded against."""
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment for the test binary: a switch of the test's own that this machine
    meets (`KUBERAY_TEST_EMBEDDED_GCS_FT`)."""

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


NOT_APPLICABLE: Mapping[str, str] = {
    "e2ekuberneteswas": (
        "it tests KubeRay's KubernetesWAS batch scheduler (a scheduling.k8s.io Workload and "
        "PodGroups for each gang-scheduled RayCluster), which ours does not have: it refuses "
        "KubernetesWAS=true at start (`crds.feature_gates.UNSUPPORTED`), and with the gate off "
        "KubeRay v1.7.0 makes none of those objects either"
    ),
}
"""KubeRay v1.7.0's e2e packages that are not run against ours, and why (none of its tests can
apply); `building.KUBERAY_E2E_PACKAGES` names every other one."""

_V150 = "v1.5.0"

CASES: tuple[Case, ...] = (
    # e2e: RayCluster basics.
    Case("e2e", "TestRayClusterAuthOptions"),
    Case("e2e", "TestRayClusterEmbeddedGCSFaultToleranceWiring"),
    # Skipped by KubeRay's CI for want of a Ray with RocksDB GCS storage (ray#63657); this
    # machine's Ray has it.
    Case(
        "e2e",
        "TestRayClusterEmbeddedGCSFaultTolerance",
        env={"KUBERAY_TEST_EMBEDDED_GCS_FT": "true"},
    ),
    Case("e2e", "TestRayClusterGCSFaultTolerance", recorded=_V150),
    Case("e2e", "TestGcsFaultToleranceOptions", minutes=15, recorded=_V150),
    Case("e2e", "TestGcsFaultToleranceAnnotations", recorded=_V150),
    Case("e2e", "TestRayClusterSingleHostMultiSlice", recorded=_V150),
    Case("e2e", "TestRayClusterMultiHostMultiSlice", recorded=_V150),
    Case("e2e", "TestRayClusterManagedBy", ci=True),
    Case("e2e", "TestRayClusterSuspend", ci=True),
    Case("e2e", "TestRayClusterWithResourceQuota", recorded=_V150),
    Case("e2e", "TestRayClusterScalingDown", recorded=_V150),
    Case("e2e", "TestRayClusterUpgradeStrategy"),
    Case("e2e", "TestRayClusterTLSAutoGenerate"),
    Case("e2e", "TestRayClusterTLSEdgeCases"),
    # e2erayjob
    Case("e2erayjob", "TestRayJobWithClusterSelector", recorded=_V150),
    Case("e2erayjob", "TestDeletionStrategy", minutes=15, recorded=_V150),
    Case("e2erayjob", "TestRayJobLightWeightMode", recorded=_V150),
    Case("e2erayjob", "TestRayJobRecovery", recorded=_V150),
    Case("e2erayjob", "TestRayJobRetry", minutes=15, recorded=_V150),
    Case("e2erayjob", "TestRayJobSidecarMode", recorded=_V150),
    Case("e2erayjob", "TestRayJobSuspend", recorded=_V150),
    Case(
        "e2erayjob",
        "TestRayJob",
        skip="TestRayJob/RayJob_(fails_when_head_Pod_is_deleted|has_exceed_SubmitterFinished)",
        minutes=20,
        recorded=_V150,
    ),
    Case(
        "e2erayjob",
        "TestRayJob",
        only="RayJob_fails_when_head_Pod_is_deleted_when_job_is_running",
        recorded=_V150,
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
        recorded=_V150,
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
    Case("e2erayjobsubmitter", "TestRayJobSubmitter", recorded=_V150),
    # e2erayservice: its Serve apps' working_dir is a GitHub archive the node serves.
    Case("e2erayservice", "TestRayServiceAuthToken"),
    Case("e2erayservice", "TestStaticRayService"),
    Case("e2erayservice", "TestAutoscalingRayService"),
    Case("e2erayservice", "TestRayServiceZeroDowntimeUpgrade"),
    Case("e2erayservice", "TestRayServiceGCSFaultTolerance"),
    Case("e2erayservice", "TestRayServiceRayClusterDeletionDelaySeconds"),
    Case("e2erayservice", "TestRayServiceInPlaceUpdate"),
    Case("e2erayservice", "TestUpdateServeConfigAndRayClusterSpec"),
    Case("e2erayservice", "TestUpdateServeConfigAndRayClusterSpecWithUpgradeDisabled"),
    Case("e2erayservice", "TestRayServiceBecomesReadyBeforeTimeout"),
    Case("e2erayservice", "TestRayServiceInitializingTimeoutTerminalFailure"),
    Case("e2erayservice", "TestRedeployRayServe"),
    Case("e2erayservice", "TestRayServiceSuspendResume"),
    Case("e2erayservice", "TestRayServiceSuspendAtomic"),
    Case("e2erayservice", "TestRayServiceCreatedSuspended"),
    Case("e2erayservice", "TestRayServiceSuspendDuringUpgrade"),
    Case("e2erayservice", "TestOldHeadPodFailDuringUpgrade"),
    Case("e2erayservice", "TestRayServiceValidation"),
    Case("e2erayservice", "TestRayServiceManagedBy"),
    # e2eautoscaler: Ray's autoscaler v1 and v2 in the head.
    Case("e2eautoscaler", "TestRayClusterAutoscalerV2IdleTimeout", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerGPUNodesForCPUTasks", recorded=_V150),
    Case(
        "e2eautoscaler",
        "TestRayClusterAutoscalerDoNotRemoveIdlesForPlacementGroup",
        recorded=_V150,
    ),
    Case("e2eautoscaler", "TestRayClusterAutoscalerSDKRequestResources", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerAddNewWorkerGroup", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerPlacementGroup", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerGCSFT", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerUpscalingModeConservative"),
    Case("e2eautoscaler", "TestRayClusterAutoscaler", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithFakeGPU", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithFakeTPU"),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithCustomResource", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerWithDesiredState", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerMinReplicasUpdate", recorded=_V150),
    Case("e2eautoscaler", "TestRayClusterAutoscalerMaxReplicasUpdate", recorded=_V150),
    # e2eincrementalupgrade: NewClusterWithIncrementalUpgrade behind a Gateway (Istio in CI).
    Case("e2eincrementalupgrade", "TestRayServiceIncrementalUpgrade", minutes=60),
    Case("e2eincrementalupgrade", "TestRayServiceIncrementalUpgradeWithLocust", minutes=60),
    Case("e2eincrementalupgrade", "TestRayServiceIncrementalUpgradeRollback", minutes=60),
    Case(
        "e2eincrementalupgrade",
        "TestRayServiceIncrementalUpgradeRollbackMatrixWithLocust",
        minutes=60,
    ),
    Case("e2eincrementalupgrade", "TestRayServiceSuspendDuringIncrementalUpgrade", minutes=30),
    # e2eraycronjob: RayCronJobs (the RayCronJob gate on, as in KubeRay's CI).
    Case("e2eraycronjob", "TestRayCronJobSuspend"),
    Case("e2eraycronjob", "TestRayCronJobNoDuplicateRayJob"),
    # e2eupgrade: a RayService across an upgrade of the operator.
    Case("e2eupgrade", "TestZeroDowntimeUpgradeAfterOperatorUpgrade", minutes=20),
    # sampleyaml: KubeRay's samples, applied with kubectl.
    Case(
        "sampleyaml",
        "TestRayCluster",
        minutes=30,
        recorded=_V150,
        fails={
            "ray-cluster.fluentbit.yaml": (
                "not ours: the node runs processes, not images, and no program on this machine "
                "stands in for fluent/fluent-bit (not in Debian or PyPI); the head's sidecar "
                "waits with CreateContainerConfigError"
            ),
        },
    ),
    # Both pass: four RayJob samples to Complete, their runtime envs pip-installed from PyPI.
    Case("sampleyaml", "TestRayJob", recorded=_V150),
    Case("sampleyaml", "TestRayJobInteractiveMode", ci=True),
    Case("sampleyaml", "TestRayService"),
)
