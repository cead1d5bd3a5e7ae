"""RayCronJob rules: its schedule, its time zone, and the RayJob it creates at each tick.

KubeRay checks a RayCronJob on every reconcile (`ValidateRayCronJobSpec`) and schedules
nothing while the check fails. We check the same, and one rule more: no schedule fires more
often than once a minute (`schedules.MIN_INTERVAL` says why). The job template goes through
every RayJob rule, as KubeRay checks it: as the spec of a RayJob without metadata, which is
what each tick's RayJob is (the template verbatim, plus KubeRay's own label and annotation;
none of the RayCronJob's annotations reach it). Its violations point into the RayCronJob,
under `spec.jobTemplate`.
"""

from __future__ import annotations

from collections.abc import Mapping

from crds.constants import ANNOTATION_CATCHUP_WINDOW
from crds.messages import quoted
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob, RayJobSpec
from crds.validation.formats import MAX_DURATION_SECONDS, parse_duration_or_seconds
from crds.validation.jobs import rayjob_violations
from crds.validation.schedules import interval_problem, schedule_problem, time_zone_problem
from crds.validation.scope import key_path
from crds.violations import Violation

_TEMPLATE_PATH = "spec.jobTemplate"
_RAYJOB_SPEC_PATH = "spec"


def raycronjob_violations(cronjob: RayCronJob) -> list[Violation]:
    """Every RayCronJob spec rule (the name is checked by the caller)."""
    spec = cronjob.spec
    found: list[Violation] = []
    problem = schedule_problem(spec.schedule) or interval_problem(spec.schedule)
    if problem is not None:
        message = f"invalid cron schedule {quoted(spec.schedule)}: {problem}"
        found.append(Violation("spec.schedule", message))
    if spec.time_zone is not None:
        problem = time_zone_problem(spec.time_zone)
        if problem is not None:
            found.append(Violation("spec.timeZone", f"timeZone {problem}"))
    window = cronjob.annotations.get(ANNOTATION_CATCHUP_WINDOW)
    if window is not None and catchup_seconds(cronjob.annotations) is None:
        path = key_path("metadata.annotations", ANNOTATION_CATCHUP_WINDOW)
        message = (
            f"{quoted(window)} is not a positive duration such as 10m or 1h, "
            f"nor whole seconds (at most {MAX_DURATION_SECONDS})"
        )
        found.append(Violation(path, message))
    found += template_violations(spec.job_template)
    return found


def catchup_seconds(annotations: Mapping[str, str]) -> int | None:
    """The catch-up window a RayCronJob's annotation sets, in whole seconds; None if none.

    Ours (`kuberay-temporal.io/catchup-window`: a Go duration such as `10m`, or seconds).
    KubeRay makes up every tick since `lastScheduleTime`, however many: after a week
    suspended, a RayCronJob that runs every minute would create ten thousand RayJobs. Here
    the newest 100 at most are made up (`activities.raycronjob.schedules.catchup_window`);
    set, the window narrows that further: the ticks missed longer ago are dropped, both while
    the Temporal server was down and when the RayCronJob is resumed.
    """
    text = annotations.get(ANNOTATION_CATCHUP_WINDOW)
    nanos = None if text is None else parse_duration_or_seconds(text)
    seconds = None if nanos is None else nanos // 1_000_000_000
    return seconds if seconds is not None and seconds > 0 else None


def template_violations(template: RayJobSpec) -> list[Violation]:
    """The RayJob rules a job template breaks, with paths under `spec.jobTemplate`."""
    found = rayjob_violations(RayJob(spec=template))
    return [Violation(_in_template(v.path), v.message) for v in found]


def _in_template(path: str) -> str:
    """`spec.x` of the RayJob is `spec.jobTemplate.x` of the RayCronJob."""
    rest = path.removeprefix(_RAYJOB_SPEC_PATH)
    if rest == path or rest[:1] not in ("", ".", "["):
        # A RayJob without metadata or status breaks no rule outside its spec.
        return path
    return _TEMPLATE_PATH + rest
