"""Ray's last answer about each running job, as the worker's watch got it (`ray_watch`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from activities.rayjob.contract import RayJobView

INTERVAL = 3.0
"""Seconds between the watch's rounds: KubeRay's requeue of a running RayJob."""

Asked = tuple[str, str, str]
"""A question to Ray: (the RayJob's uid, the cluster asked, the job id). The cluster is part of
it: the watch asks the one the RayJob's status names, which anyone allowed to write that status
could change; the workflow asks its own, and takes only an answer from that one."""


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
        self._answers: dict[Asked, tuple[float, RayJobView]] = {}

    def keep(self, asked: Asked, view: RayJobView) -> None:
        """Keep Ray's answer to the question `asked`, as of now."""
        if view.found:
            self._answers[asked] = (self._clock(), view)
        else:
            self._answers.pop(asked, None)

    def fresh(self, asked: Asked, within: float = INTERVAL) -> RayJobView | None:
        """The answer to the question `asked` kept less than `within` s ago, if any."""
        kept = self._answers.get(asked)
        if kept is None or self._clock() - kept[0] >= within:
            return None
        return kept[1]

    def keep_only(self, asked: set[Asked]) -> None:
        """Forget the jobs no longer running (their RayJobs moved on or went)."""
        self._answers = {key: kept for key, kept in self._answers.items() if key in asked}
