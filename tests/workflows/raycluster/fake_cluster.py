"""An in-memory RayCluster and its pods, standing in for the Kubernetes API.

A test double at the activity boundary, for the time-skipping workflow tests only (layer 2):
the real activities are tested against devcluster. It implements the RayCluster activities
under their real names and keeps what a kube-apiserver would: the CR with its generation, the
pods the workflow creates (Pending until the test makes them ready), Events and status writes.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from temporalio import activity

from activities.contract import DesiredResources, PodView, ServiceView, Written
from activities.raycluster import contract
from crds.constants import FINALIZER_GCS_FT_REDIS_CLEANUP as FINALIZER
from crds.feature_gates import FeatureGates
from crds.raycluster import RayCluster, RayClusterSpec, RayClusterStatus
from crds.validation.gates import gate_violations
from crds.violations import reported


class FakeCluster:
    """One RayCluster, its pods and its head Service."""

    def __init__(self, name: str, spec: dict[str, Any], namespace: str = "default") -> None:
        self.name, self.namespace = name, namespace
        self.spec = spec
        self.generation = 1
        self.annotations: dict[str, str] = {}
        self.exists = True
        self.deleting = False
        self.pods: dict[str, PodView] = {}
        self.head_service: ServiceView | None = None
        self.status: RayClusterStatus | None = None
        self.status_writes = 0
        self.events: list[contract.EventSpec] = []
        self.created: list[str] = []
        self.batches: list[int] = []
        """How many pods each apply was told to create."""
        self.pods_read_as_of: list[int] = []
        """`pods_as_of` of every read: how new the pods had to be."""
        self.read_as_of: list[int] = []
        """`as_of` of every read: how new the RayCluster had to be."""
        self.pods_seen = 0
        """The pod version every read reports it reflects."""
        self.version = 100
        """The RayCluster's resourceVersion, bumped by every write of the workflow's."""
        self.fail_creates = False
        self.refuse_services = False
        """The head Service's create refused, as an API server without the rule answers."""
        self.finalizers: list[str] = []
        self.deleted_at: datetime | None = None
        self.cleanup_job: str | None = None
        """None (no Job), "running", "Complete" or "Failed"."""
        self.redis_cleanup = True
        self.gates = FeatureGates()
        self.head_name = ""
        """The fixed head name the read reports (ENABLE_DETERMINISTIC_HEAD_POD_NAME)."""
        """ENABLE_GCS_FT_REDIS_CLEANUP as the read reports it (the real read: the settings)."""

    # --- what tests do to the "cluster" -------------------------------------------------------

    def edit(self, **fields: Any) -> None:
        self.spec = {**self.spec, **fields}
        self.generation += 1

    def set_group(self, index: int, **fields: Any) -> None:
        groups = [dict(g) for g in self.spec["workerGroupSpecs"]]
        groups[index].update(fields)
        self.edit(workerGroupSpecs=groups)

    def make_ready(self) -> None:
        for name, pod in list(self.pods.items()):
            if not pod.terminating:
                self.pods[name] = pod.model_copy(update={"phase": "Running", "ready": True})

    def finish_terminating(self) -> None:
        self.pods = {n: p for n, p in self.pods.items() if not p.terminating}

    def live(self, node_type: str | None = None) -> list[str]:
        return sorted(
            n
            for n, p in self.pods.items()
            if not p.terminating and (node_type is None or p.node_type == node_type)
        )

    # --- the activities -----------------------------------------------------------------------

    def activities(self) -> list[Any]:
        return [
            self.read,
            self.apply,
            self.write_status,
            self.set_suspend,
            self.record_event,
            self.cleanup_step,
        ]

    def delete(self, at: datetime) -> None:
        """What the API server does on DELETE: gone at once, unless finalizers hold it."""
        if self.finalizers:
            self.deleted_at = at
        else:
            self.exists = False

    @activity.defn(name=contract.CLEANUP_CLUSTER.name)
    async def cleanup_step(self, params: contract.CleanupStepInput) -> Written:
        if params.step == "AddFinalizer":
            self.finalizers.append(FINALIZER)
            return self._written()
        elif params.step == "DeletePods":
            for name in self.live():
                self._terminate(name)
        elif params.step == "CreateJob":
            self.cleanup_job = self.cleanup_job or "running"
        elif params.step in ("RemoveFinalizer", "ForceRemoveFinalizer"):
            self.finalizers.remove(FINALIZER)
            if params.step == "ForceRemoveFinalizer":
                reason = "ForceDeletedStuckCluster"
                self.events.append(
                    contract.EventSpec(type="Warning", reason=reason, message=params.reason)
                )
            if self.deleted_at is not None and not self.finalizers:
                self.exists = False
            return self._written()
        return Written()

    def _written(self) -> Written:
        self.version += 1
        return Written(version=self.version)

    @activity.defn(name=contract.READ_CLUSTER.name)
    async def read(self, params: contract.ReadClusterInput) -> contract.ClusterSnapshot:
        self.pods_read_as_of.append(params.pods_as_of)
        self.read_as_of.append(params.as_of)
        if not self.exists:
            return contract.ClusterSnapshot(exists=False)
        spec = RayClusterSpec.model_validate(self.spec)
        same = params.known_generation == self.generation
        groups = [g.group_name for g in spec.worker_group_specs or []]
        return contract.ClusterSnapshot(
            generation=self.generation,
            deleting=self.deleted_at is not None,
            deleted_at=self.deleted_at,
            finalizers=list(self.finalizers),
            redis_cleanup=self.redis_cleanup,
            gate_violations=reported(gate_violations(RayCluster(spec=spec), self.gates)),
            cleanup_job_exists=self.cleanup_job is not None,
            cleanup_job_finished=self.cleanup_job if self.cleanup_job != "running" else None,
            annotations=dict(self.annotations),
            spec=None if same else spec,
            status=self.status if params.known_generation is None else None,
            spec_hash=hashlib.sha1(json.dumps(self.spec, sort_keys=True).encode()).hexdigest(),
            head_prefix=f"{self.name}-head-",
            head_name=self.head_name,
            worker_prefixes={g: f"{self.name}-{g}-worker-" for g in groups},
            resources=DesiredResources(cpu="1"),
            pods=list(self.pods.values()),
            pods_seen=self.pods_seen,
            head_service=self.head_service,
            missing_objects=[] if self.head_service else [f"Service/{self.name}-head-svc"],
        )

    @activity.defn(name=contract.APPLY_CLUSTER.name)
    async def apply(self, params: contract.ApplyClusterInput) -> contract.ApplyClusterResult:
        if params.generation != self.generation:
            return contract.ApplyClusterResult(stale=True)
        self.batches.append(len(params.creations))
        result = contract.ApplyClusterResult()
        if params.ensure_objects:
            if self.refuse_services:
                raise RuntimeError('403 Forbidden: cannot create resource "services"')
            self.head_service = ServiceView(
                name=f"{self.name}-head-svc", cluster_ip="None", ports={"dashboard": "8265"}
            )
            result.head_service = self.head_service
        if params.delete_all_reason:
            for name in self.live():
                self._terminate(name)
        for deletion in params.deletions:
            if deletion.name in self.pods:
                self._terminate(deletion.name)
                result.deleted.append(deletion.name)
        for creation in params.creations:
            if self.fail_creates:
                from activities.contract import ReplicaFailure

                result.failure = ReplicaFailure(
                    reason="FailedCreateWorkerPod", message="exceeded quota"
                )
                break
            node_type = "head" if creation.head else "worker"
            self.pods[creation.name] = PodView(
                name=creation.name,
                node_type=node_type,
                group=creation.group,
                phase="Pending",
                recreate_hash=self.read_hash() if creation.head else "",
                replica_index=creation.replica_index,
            )
            self.created.append(creation.name)
            result.created.append(creation.name)
            result.created_pods.append(self.pods[creation.name])
        return result

    def read_hash(self) -> str:
        return hashlib.sha1(json.dumps(self.spec, sort_keys=True).encode()).hexdigest()

    def _terminate(self, name: str) -> None:
        self.pods[name] = self.pods[name].model_copy(update={"terminating": True})

    @activity.defn(name=contract.WRITE_CLUSTER_STATUS.name)
    async def write_status(self, params: contract.WriteStatusInput) -> Written:
        self.status = params.status
        self.status_writes += 1
        return self._written()

    @activity.defn(name=contract.SET_CLUSTER_SUSPEND.name)
    async def set_suspend(self, params: contract.SetSuspendInput) -> Written:
        if bool(self.spec.get("suspend")) != params.suspend:
            self.edit(suspend=params.suspend)
        return self._written()

    @activity.defn(name=contract.RECORD_EVENT.name)
    async def record_event(self, params: contract.RecordEventInput) -> None:
        self.events.append(params.event)
