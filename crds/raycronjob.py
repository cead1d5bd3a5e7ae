"""RayCronJob (ray.io/v1): a RayJob template and the cron schedule it is created on.

The template is a whole RayJob spec, typed as one (`RayJobSpec`), so it is loaded, checked and
described in the CRD exactly like a RayJob's `spec`: the RayJob created at each tick is that
spec verbatim. The schedule is kept as the string the user wrote; `crds.validation.schedules`
says whether KubeRay would accept it.
"""

from __future__ import annotations

from typing import Literal

from crds.common import Bool, RayModel, RayObject, Str, Time
from crds.rayjob import RayJobSpec


class RayCronJobSpec(RayModel):
    """RayCronJob `spec`."""

    job_template: RayJobSpec
    schedule: Str
    """Standard 5-field cron, or a descriptor such as `@daily` or `@every 1h`."""
    time_zone: Str | None = None
    """An IANA zone; unset means the controller's local zone, as in KubeRay."""
    suspend: Bool | None = None
    """Stops new ticks; RayJobs already created run on."""


class RayCronJobStatus(RayModel):
    """RayCronJob `status`."""

    last_schedule_time: Time | None = None


class RayCronJob(RayObject):
    """A RayCronJob custom resource."""

    kind: Literal["RayCronJob"] = "RayCronJob"
    spec: RayCronJobSpec
    status: RayCronJobStatus | None = None
