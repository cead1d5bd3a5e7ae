"""Patched behaviours, checked once per run where a run can take them all.

Every `workflow.patched()` a run takes for the first time records a marker and upserts the
`TemporalChangeVersion` search attribute: two history events and a billed action each. A
workflow that began after all of a kind's patches existed would pay that for each of them.
`Patches` checks one patch that stands for all of them (`covering`) first thing in the run:
a new run takes them all for one marker; a run recorded before it replays the individual
patches as it took them. A patch added later gets a newer covering patch that stands for it and
every earlier one; coverings are checked newest first, so a run recorded under an older
covering keeps replaying it.
"""

from __future__ import annotations

from temporalio import workflow

Covering = tuple[str, frozenset[str]]
"""A covering patch's id and the patches it stands for."""


class Patches:
    """The patched behaviours one workflow run follows."""

    def __init__(self, *coverings: Covering) -> None:
        self._coverings = coverings  # newest first
        self._covered: frozenset[str] | None = None

    def start(self) -> None:
        """Decide on the covering patch: the run's first step."""
        self._covered = frozenset()
        for covering, covered in self._coverings:
            if workflow.patched(covering):
                self._covered = covered
                return

    def on(self, patch_id: str) -> bool:
        """Whether this run follows `patch_id` (recording its marker if it is new)."""
        if self._covered is None:
            self.start()
        assert self._covered is not None
        return patch_id in self._covered or workflow.patched(patch_id)
