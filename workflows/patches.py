"""Patched behaviours, checked once per run where a run can take them all.

Every `workflow.patched()` a run takes for the first time records a marker and upserts the
`TemporalChangeVersion` search attribute: two history events and a billed action each. A
workflow that began after all of a kind's patches existed would pay that for each of them.
`Patches` checks one patch that stands for all of them (`covering`) first thing in the run:
a new run takes them all for one marker; a run recorded before it replays the individual
patches as it took them. A patch added later gets a newer covering patch that stands for it and
every earlier one; coverings are checked newest first, so a run recorded under an older
covering keeps replaying it.

A run can also be told its covering in its start input (the bridge names its kind's newest,
`messages.COVERING_PATCHES`, and a run continued as new the newest its worker knows): it then
takes that covering's patches without a marker at all, since the input itself is recorded. A
worker that does not know the covering named (one older than the bridge or worker that started
the run) fails the workflow task instead of guessing, so the run waits for a worker that knows it.
"""

from __future__ import annotations

from temporalio import workflow

Covering = tuple[str, frozenset[str]]
"""A covering patch's id and the patches it stands for."""


class Patches:
    """The patched behaviours one workflow run follows."""

    def __init__(self, *coverings: Covering, given: str | None = None) -> None:
        """The run's patches: which coverings there are, and which its input names.

        Args:
            coverings: The kind's covering patches, newest first.
            given: The covering the run's start input names; None for a run started without
                one, which checks the coverings by their markers.
        """
        self._coverings = coverings
        self._given = given
        self._covered: frozenset[str] | None = None

    @property
    def newest(self) -> str:
        """The newest covering patch: what a run this worker starts is told to follow."""
        return self._coverings[0][0]

    def start(self) -> None:
        """Decide on the covering patch: the run's first step.

        Raises:
            UnknownPatches: the covering `given` is none of this worker's.
        """
        if self._given is not None:
            covered = dict(self._coverings).get(self._given)
            if covered is None:
                raise UnknownPatches(self._given)
            self._covered = covered
            return
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


class UnknownPatches(RuntimeError):
    """A run's start input names a covering patch this worker does not know.

    Not an `ApplicationError`: it fails the workflow task, not the workflow, so Temporal offers
    the task again, to a worker that knows the covering once one polls.
    """

    def __init__(self, covering: str) -> None:
        super().__init__(
            f"the run was started to follow patch {covering!r}, which this worker does not "
            "know: it is older than the bridge (or the worker continuing a run as new) that "
            "started the run; a worker of that release will take the run over"
        )
