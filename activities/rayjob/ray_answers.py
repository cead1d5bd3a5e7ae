"""Ray's last answer about each running job, as the worker's watch got it (`ray_watch`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from activities.rayjob.contract import RayJobView

INTERVAL = 3.0
"""Seconds between the watch's rounds: KubeRay's requeue of a running RayJob."""


class RayAnswers:
    """Ray's last answer about each running job as the watch got it, for the workflow's ask.

    The watch nudges a workflow because Ray's answer changed; the workflow then asks Ray about
    the job itself, a second call for the same answer (a job of a few seconds cost KubeRay's
    questions and one more). Its ask takes the watch's answer instead while it is younger than
    a round (`INTERVAL`, KubeRay's requeue): as new as KubeRay's would be. Only a job Ray has:
    "not found" may be from before the submission, and "unreachable" starts a clock, so those
    are always asked.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._answers: dict[tuple[str, str], tuple[float, RayJobView]] = {}

    def keep(self, uid: str, job_id: str, view: RayJobView) -> None:
        """Keep Ray's answer about job `job_id` of the RayJob `uid`, as of now."""
        if view.found:
            self._answers[(uid, job_id)] = (self._clock(), view)
        else:
            self._answers.pop((uid, job_id), None)

    def fresh(self, uid: str, job_id: str, within: float = INTERVAL) -> RayJobView | None:
        """The answer about the job kept less than `within` s ago, if any."""
        kept = self._answers.get((uid, job_id))
        if kept is None or self._clock() - kept[0] >= within:
            return None
        return kept[1]

    def keep_only(self, keys: set[tuple[str, str]]) -> None:
        """Forget the jobs no longer running (their RayJobs moved on or went)."""
        self._answers = {key: kept for key, kept in self._answers.items() if key in keys}
