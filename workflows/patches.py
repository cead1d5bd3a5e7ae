"""Patched behaviours, checked once per run where a run can take them all.

Every `workflow.patched()` a run takes for the first time records a marker and upserts the
`TemporalChangeVersion` search attribute: two history events and a billed action each. A
workflow that began after all of a kind's patches existed would pay that for each of them.
`Patches` checks one patch that stands for all of them (`covering`) first thing in the run:
a new run takes them all for one marker; a run recorded before it replays the individual
patches as it took them. A patch added later is checked on its own until the next covering.
"""

from __future__ import annotations

from temporalio import workflow


class Patches:
    """The patched behaviours one workflow run follows."""

    def __init__(self, covering: str, covered: frozenset[str]) -> None:
        self._covering, self._covered = covering, covered
        self._all: bool | None = None

    def start(self) -> None:
        """Decide on the covering patch: the run's first step."""
        self._all = workflow.patched(self._covering)

    def on(self, patch_id: str) -> bool:
        """Whether this run follows `patch_id` (recording its marker if it is new)."""
        if self._all is None:
            self.start()
        if self._all and patch_id in self._covered:
            return True
        return workflow.patched(patch_id)
