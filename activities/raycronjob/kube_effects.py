"""The RayCronJob's Kubernetes activities: read it, write `spec.suspend`, create a tick's RayJob.

Each re-reads the RayCronJob and checks its uid, so a RayCronJob re-created under the same
name is never touched by the old one's workflows or Schedule.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from temporalio import activity

from activities.builders.raycronjob import build_scheduled_rayjob
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeNotFound, KubeRejected
from activities.kube.spans import stamp_trace_context
from activities.raycronjob import contract
from crds.common import format_time
from crds.feature_gates import FeatureGates
from crds.loading import parse_ray_object
from crds.raycronjob import RayCronJob
from crds.redaction import strings_in, without_values
from crds.refs import ObjectRef
from crds.validation import validate
from crds.validation.cronjobs import catchup_seconds
from crds.validation.gates import gate_violations
from crds.violations import InvalidObjectError, reported

_REFUSAL_CHARS = 500
"""The most of an API server's refusal an Event quotes (a quota's lists every resource)."""


class CronJobActivities:
    """RayCronJob side effects against one Kubernetes API."""

    def __init__(self, client: KubeClient, gates: FeatureGates | None = None) -> None:
        self._kube = client
        self._gates = gates or FeatureGates()

    def activities(self) -> list[Callable[..., Any]]:
        """The bound activity methods, for worker registration."""
        return [self.read, self.set_suspend, self.create_scheduled_rayjob]

    @activity.defn(name=contract.READ_RAYCRONJOB.name)
    async def read(self, params: contract.ReadCronJobInput) -> contract.CronJobSnapshot:
        """Read the RayCronJob's schedule, switches and status, and what is wrong with it."""
        obj = await self._own(params.ref)
        if obj is None:
            return contract.CronJobSnapshot(exists=False)
        meta = obj["metadata"]
        found: dict[str, Any] = {
            "generation": int(meta.get("generation") or 0),
            "deleting": bool(meta.get("deletionTimestamp")),
            "created_at": meta.get("creationTimestamp"),
            "last_schedule_time": (obj.get("status") or {}).get("lastScheduleTime"),
        }
        try:
            cronjob = parse_ray_object(obj)
        except InvalidObjectError as err:
            violations = reported(err.violations)
            return contract.CronJobSnapshot.model_validate(found | {"violations": violations})
        assert isinstance(cronjob, RayCronJob)
        violations = reported(gate_violations(cronjob, self._gates) + validate(cronjob))
        wanted = None
        if not violations:
            wanted = contract.ScheduleWanted(
                cron=cronjob.spec.schedule,
                time_zone=cronjob.spec.time_zone or "",
                catchup_seconds=catchup_seconds(cronjob.annotations),
            )
        return contract.CronJobSnapshot.model_validate(
            found
            | {"suspend": bool(cronjob.spec.suspend), "violations": violations, "wanted": wanted}
        )

    @activity.defn(name=contract.SET_RAYCRONJOB_SUSPEND.name)
    async def set_suspend(self, params: contract.SetCronJobSuspendInput) -> None:
        """Write `spec.suspend` (a person's suspend or resume signal)."""
        if await self._own(params.ref) is not None:
            await self._patch(params.ref, {"spec": {"suspend": params.suspend}})

    @activity.defn(name=contract.CREATE_SCHEDULED_RAYJOB.name)
    async def create_scheduled_rayjob(
        self, params: contract.CreateScheduledJobInput
    ) -> contract.FiringResult:
        """Create the tick's RayJob from the RayCronJob as it is now; advance `lastScheduleTime`.

        A firing for a RayCronJob that is gone, being deleted or suspended creates nothing:
        its Schedule is being deleted or paused, and this firing raced that change. A create
        the API server refuses (4xx) is answered, not raised: it is for the workflow to tell.
        """
        ref = params.ref
        obj = await self._own(ref)
        if obj is None:
            return contract.FiringResult(skipped=f"{ref} is gone")
        if obj["metadata"].get("deletionTimestamp"):
            return contract.FiringResult(skipped=f"{ref} is being deleted")
        if (obj.get("spec") or {}).get("suspend") is True:
            return contract.FiringResult(skipped=f"{ref} is suspended")
        manifest = build_scheduled_rayjob(obj, params.scheduled_at)
        # The RayJob's own workflow then continues this trace (`activities.kube.spans`).
        stamp_trace_context(manifest)
        name = manifest["metadata"]["name"]
        try:
            _, created = await self._kube.create_or_get(kube.RAYJOBS, ref.namespace, manifest)
        except KubeRejected as err:
            # A quota, RBAC or an invalid object: the same create would be refused again.
            refusal = without_values(str(err), strings_in(manifest["spec"]))
            return contract.FiringResult(rayjob=name, refused=refusal[:_REFUSAL_CHARS])
        await self._advance(ref, obj, params.scheduled_at)
        return contract.FiringResult(rayjob=name, created=created)

    async def _advance(self, ref: ObjectRef, obj: kube.JSON, scheduled_at: datetime) -> None:
        """Write `status.lastScheduleTime` unless a later tick's is already there."""
        written = (obj.get("status") or {}).get("lastScheduleTime")
        if written and datetime.fromisoformat(written) >= scheduled_at:
            return
        # The resourceVersion makes it a compare-and-swap: two firings made up at once cannot
        # move the time back (the loser's retry reads the winner's time).
        patch = {
            "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
            "status": {"lastScheduleTime": format_time(scheduled_at)},
        }
        await self._patch(ref, patch, sub="status")

    async def _own(self, ref: ObjectRef) -> kube.JSON | None:
        """The RayCronJob this workflow is for; None if gone or re-created under the same name."""
        return await self._kube.get_same(kube.RAYCRONJOBS, ref.namespace, ref.name, ref.uid)

    async def _patch(self, ref: ObjectRef, patch: kube.JSON, sub: str = "") -> None:
        with contextlib.suppress(KubeNotFound):  # the CR is gone: nothing left to write
            await self._kube.patch(kube.RAYCRONJOBS, ref.namespace, ref.name, patch, sub=sub)
