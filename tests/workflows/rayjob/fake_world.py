"""An in-memory RayJob, its RayClusters, its submitter and a Ray job table.

A test double at the activity boundary for the time-skipping workflow tests (layer 2): it
implements the RayJob activities under their real names and keeps what the API server and a
Ray dashboard would. Clusters start unready until the test calls `make_ready`; the submitter
(K8sJobMode) and the sidecar (SidecarMode) "submit" the job as the real ones would; the test
finishes jobs with `finish`. `ask_ray_job` answers at once, as the real one does: the workflow
paces its questions with durable timers, which the tests skip with `env.sleep`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import activity

from activities.rayjob import contract
from crds.enums import JobStatus
from crds.feature_gates import FeatureGates
from crds.raycluster import RayClusterStatus
from crds.rayjob import RayJob, RayJobSpec, RayJobStatus
from crds.validation.gates import gate_violations
from crds.violations import reported

CREATED_VERSION = 3
"""The resourceVersion every created RayCluster reports (older than any news in the tests)."""


@dataclass
class FakeRayCluster:
    name: str
    attempt: int
    job_id: str
    state: str = ""
    deleting: bool = False
    pods: int = 2
    workers_suspended: bool = False


@dataclass
class FakeSubmitter:
    job_id: str
    attempt: int
    finished_at: datetime | None = None
    failed: bool = False


@dataclass
class RayRecord:
    status: JobStatus = JobStatus.RUNNING
    message: str = ""
    start_ms: int = 1_000
    end_ms: int = 0


@dataclass
class FakeJobWorld:
    name: str
    spec: dict[str, Any]
    generation: int = 1
    exists: bool = True
    deleting: bool = False
    finalizers: set[str] = field(default_factory=set)
    status: RayJobStatus | None = None
    status_writes: list[RayJobStatus] = field(default_factory=list)
    clusters_read_as_of: list[int] = field(default_factory=list)
    """`cluster_as_of` of every read: how new the RayCluster had to be."""
    read_as_of: list[int] = field(default_factory=list)
    """`as_of` of every read: how new the RayJob had to be."""
    deletes_as_of: list[int] = field(default_factory=list)
    """`cluster_as_of` of every attempt deletion."""
    writes: int = 0
    """Writes to the RayJob so far; each one's version is 100 more than this count."""
    asks: int = 0
    """Questions to Ray about a job."""
    stale_status_writes: int = 0
    """Status writes naming a version the RayJob had already left by the workflow's own
    write: each a 409, a GET and the write again on a real API server."""
    unmade_cluster_reads: int = 0
    """Reads naming a cluster before the workflow created it: a GET and a LIST for nothing."""
    left_pods_counted: list[tuple[str, bool]] = field(default_factory=list)
    """(deployment status, `count_left_pods`) of every read that named a cluster."""
    clusters: dict[str, FakeRayCluster] = field(default_factory=dict)
    created_clusters: list[str] = field(default_factory=list)
    submitter: FakeSubmitter | None = None
    submitters_created: int = 0
    ray_jobs: dict[str, RayRecord] = field(default_factory=dict)
    submissions: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    dashboard_up: bool = True
    refused: int = 0
    """Submissions the dashboard refused while down."""
    events: list[contract.EventSpec] = field(default_factory=list)
    deleted_self: bool = False
    sidecar_end: datetime | None = None
    gc_on_delete: bool = True
    """Deleted clusters vanish at once (else they linger until `collect`)."""
    options: contract.JobOperatorOptions = field(default_factory=contract.JobOperatorOptions)
    gates: FeatureGates = field(default_factory=FeatureGates)
    """The operator switches the read activity reports, as the real one does from settings."""

    # --- what tests do ------------------------------------------------------------------------

    def edit(self, **fields: Any) -> None:
        self.spec = {**self.spec, **fields}
        self.generation += 1

    def live_clusters(self) -> list[str]:
        return sorted(n for n, c in self.clusters.items() if not c.deleting)

    def current(self) -> FakeRayCluster | None:
        name = self.status.ray_cluster_name if self.status else None
        return self.clusters.get(name or "")

    def make_ready(self) -> None:
        for cluster in self.clusters.values():
            if cluster.deleting:
                continue
            cluster.state = "ready"
            if self.mode == "SidecarMode":
                self.ray_jobs.setdefault(cluster.job_id, RayRecord())
                self.submissions.append(cluster.job_id)

    def finish(self, status: JobStatus, at: datetime, message: str = "") -> None:
        """End the current attempt's Ray job; its submitter (if any) finishes with it."""
        assert self.status is not None and self.status.job_id
        record = self.ray_jobs[self.status.job_id]
        record.status, record.message, record.end_ms = status, message, 2_000
        self.sidecar_end = at
        if self.submitter is not None:
            self.submitter.finished_at = at
            self.submitter.failed = status == JobStatus.FAILED

    def collect(self) -> None:
        self.clusters = {n: c for n, c in self.clusters.items() if not c.deleting}

    @property
    def mode(self) -> str:
        return str(self.spec.get("submissionMode", "K8sJobMode"))

    @property
    def state(self) -> str:
        return str(self.status.job_deployment_status) if self.status else ""

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]

    # --- the activities -----------------------------------------------------------------------

    def activities(self) -> list[Any]:
        return [
            self.read,
            self.create_cluster,
            self.create_submitter,
            self.delete_attempt,
            self.suspend_workers,
            self.delete_rayjob,
            self.ensure_head_service,
            self.submit,
            self.ask,
            self.stop,
            self.write_status,
            self.set_suspend,
            self.set_finalizer,
            self.record_event,
        ]

    @activity.defn(name=contract.READ_RAYJOB.name)
    async def read(self, params: contract.ReadJobInput) -> contract.JobSnapshot:
        self.clusters_read_as_of.append(params.cluster_as_of)
        self.read_as_of.append(params.as_of)
        if not self.exists:
            return contract.JobSnapshot(exists=False)
        if params.cluster_name:
            deployment = self.status.job_deployment_status if self.status else None
            self.left_pods_counted.append((str(deployment), params.count_left_pods))
            if params.cluster_name not in self.created_clusters:
                self.unmade_cluster_reads += 1
        same = params.known_generation == self.generation
        return contract.JobSnapshot(
            resource_version=str(100 + self.writes),
            options=self.options,
            generation=self.generation,
            deleting=self.deleting,
            has_finalizer="ray.io/rayjob-finalizer" in self.finalizers,
            spec=None if same else RayJobSpec.model_validate(self.spec),
            gate_violations=reported(
                gate_violations(RayJob(spec=RayJobSpec.model_validate(self.spec)), self.gates)
            ),
            status=self.status if params.known_generation is None else None,
            cluster=self._cluster_view(params.cluster_name),
            submitter=self._submitter_view(params.cluster_name),
        )

    def _cluster_view(self, name: str | None) -> contract.ClusterView | None:
        cluster = self.clusters.get(name or "")
        if cluster is None:
            return None if name is None else contract.ClusterView(name=name, exists=False)
        return contract.ClusterView(
            name=cluster.name,
            deleting=cluster.deleting,
            status=RayClusterStatus(state=cluster.state or None),
            dashboard_url=f"{cluster.name}-head-svc.default.svc.cluster.local:8265",
            head_pod=True,
            pods=cluster.pods,
            workers_suspended=cluster.workers_suspended,
        )

    def _submitter_view(self, cluster_name: str | None) -> contract.SubmitterView | None:
        if self.mode == "SidecarMode":
            cluster = self.clusters.get(cluster_name or "")
            record = self.ray_jobs.get(cluster.job_id) if cluster else None
            if record is None or not record.status.is_terminal:
                return None
            failed = record.status == JobStatus.FAILED
            return contract.SubmitterView(finished_at=self.sidecar_end, failed=failed)
        if self.submitter is None:
            return None
        return contract.SubmitterView(
            finished_at=self.submitter.finished_at,
            failed=self.submitter.failed,
            reason="BackoffLimitExceeded" if self.submitter.failed else "",
        )

    @activity.defn(name=contract.CREATE_RAYJOB_CLUSTER.name)
    async def create_cluster(self, params: contract.CreateClusterInput) -> contract.CreateResult:
        if params.cluster_name in self.clusters:
            return contract.CreateResult(created=False)
        self.clusters[params.cluster_name] = FakeRayCluster(
            params.cluster_name, params.attempt, params.job_id
        )
        self.created_clusters.append(params.cluster_name)
        self._event("CreatedRayCluster", f"Created RayCluster default/{params.cluster_name}")
        return contract.CreateResult(version=CREATED_VERSION)

    @activity.defn(name=contract.CREATE_SUBMITTER_JOB.name)
    async def create_submitter(
        self, params: contract.CreateSubmitterInput
    ) -> contract.CreateResult:
        if self.submitter is not None:
            return contract.CreateResult(created=False)
        self.submitter = FakeSubmitter(params.job_id, params.attempt)
        self.submitters_created += 1
        self._event("CreatedRayJobSubmitter", f"Created Kubernetes Job default/{self.name}")
        if params.job_id not in self.ray_jobs:  # the submitter's `ray job submit`
            self.ray_jobs[params.job_id] = RayRecord()
            self.submissions.append(params.job_id)
        return contract.CreateResult()

    @activity.defn(name=contract.DELETE_ATTEMPT.name)
    async def delete_attempt(
        self, params: contract.DeleteAttemptInput
    ) -> contract.DeleteAttemptResult:
        self.deletes_as_of.append(params.cluster_as_of)
        cluster = self.clusters.get(params.cluster_name or "")
        if params.delete_cluster and cluster is not None and not cluster.deleting:
            cluster.deleting = True
            self._event("DeletedRayCluster", f"Deleted cluster default/{cluster.name}")
        if params.delete_submitter and self.submitter is not None:
            self.submitter = None
            self._event("DeletedRayJobSubmitter", f"Deleted submitter K8s Job default/{self.name}")
        if self.gc_on_delete:
            self.collect()
        remaining = [n for n in self.clusters if n == params.cluster_name]
        return contract.DeleteAttemptResult(remaining=remaining)

    @activity.defn(name=contract.SUSPEND_WORKERS.name)
    async def suspend_workers(self, params: contract.SuspendWorkersInput) -> None:
        self.clusters[params.cluster_name].workers_suspended = True
        self._event("UpdatedRayCluster", f"Set suspend on workers of {params.cluster_name}")

    @activity.defn(name=contract.DELETE_RAYJOB.name)
    async def delete_rayjob(self, params: contract.RayJobRef) -> None:
        self.deleted_self = True
        self.deleting = True

    @activity.defn(name=contract.ENSURE_RAYJOB_HEAD_SERVICE.name)
    async def ensure_head_service(self, params: contract.EnsureHeadServiceInput) -> None:
        pass

    @activity.defn(name=contract.SUBMIT_RAY_JOB.name)
    async def submit(self, params: contract.SubmitRayJobInput) -> contract.SubmitRayJobResult:
        if not self.dashboard_up:
            self.refused += 1
            return contract.SubmitRayJobResult(submitted=False, error="connection refused")
        if params.job_id in self.ray_jobs:
            return contract.SubmitRayJobResult(duplicate=True)
        self.ray_jobs[params.job_id] = RayRecord()
        self.submissions.append(params.job_id)
        return contract.SubmitRayJobResult()

    @activity.defn(name=contract.ASK_RAY_JOB.name)
    async def ask(self, params: contract.AskRayJobInput) -> contract.RayJobView:
        self.asks += 1
        if not self.dashboard_up:
            return contract.RayJobView(reachable=False, error="connection refused")
        record = self.ray_jobs.get(params.job_id)
        if record is None:
            return contract.RayJobView(found=False)
        return contract.RayJobView(
            found=True,
            status=record.status,
            message=record.message,
            start_time_ms=record.start_ms,
            end_time_ms=record.end_ms,
        )

    @activity.defn(name=contract.STOP_RAY_JOB.name)
    async def stop(self, params: contract.StopRayJobInput) -> None:
        self.stopped.append(params.job_id)
        if params.job_id in self.ray_jobs:
            self.ray_jobs[params.job_id].status = JobStatus.STOPPED

    @activity.defn(name=contract.WRITE_RAYJOB_STATUS.name)
    async def write_status(self, params: contract.WriteJobStatusInput) -> contract.Written:
        if params.read_version and params.read_version != str(100 + self.writes):
            self.stale_status_writes += 1
        self.status = params.status
        self.status_writes.append(params.status)
        return self._written()

    @activity.defn(name=contract.SET_RAYJOB_SUSPEND.name)
    async def set_suspend(self, params: contract.SetJobSuspendInput) -> contract.Written:
        if bool(self.spec.get("suspend")) != params.suspend:
            self.edit(suspend=params.suspend)
        return self._written()

    @activity.defn(name=contract.SET_RAYJOB_FINALIZER.name)
    async def set_finalizer(self, params: contract.SetFinalizerInput) -> contract.Written:
        written = self._written()
        if params.present:
            self.finalizers.add("ray.io/rayjob-finalizer")
        else:
            self.finalizers.discard("ray.io/rayjob-finalizer")
            if self.deleting:
                # Gone: the garbage collector takes what the RayJob owns.
                self.exists = False
                self.clusters.clear()
                self.submitter = None
        return written

    def _written(self) -> contract.Written:
        self.writes += 1
        return contract.Written(version=100 + self.writes)

    @activity.defn(name=contract.RECORD_EVENT.name)
    async def record_event(self, params: contract.RecordEventInput) -> None:
        self.events.append(params.event)

    def _event(self, reason: str, message: str) -> None:
        self.events.append(contract.EventSpec(reason=reason, message=message))
