"""What every CR workflow shares: the bridge's signals, `suspend` and `resume`, `progress`.

The RayCluster, RayJob and RayService workflows each reconcile one CR. The bridge tells them
the same three things (`spec_changed`, `owned_changed`, `deleted`), a person may send each
`suspend` and `resume`, and each answers the `progress` query from the same fields of its
state. `CrWorkflow` holds those handlers once; a kind says what differs through the hooks
below (`_spec_changed`, `_owned_changed`, `_headline`, `_summary`, `_waiting_for`). The
signal and query names are the ones histories were recorded with (`messages`).
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from crds.refs import ObjectRef
    from workflows import messages, user_signals


class EntityState(Protocol):
    """The fields of a kind's state that the shared handlers read and write."""

    generation: int
    dirty: bool
    gone: bool
    user_suspend: bool | None
    decisions: list[str]


S = TypeVar("S", bound=EntityState)

SETTLED_HISTORY = 100
"""History events after which a run with nothing under way goes on in a new run. The SDK keeps
state for every event of a cached run (a bare workflow kept open grew its worker by ~57 KiB
after 4 activities, ~140 KiB after 12 activities and 20 signals, ~47 KiB after the same and a
continue-as-new; `benchmarks.scale` prints the first beside ours), so a long-lived CR whose
pods keep changing would otherwise grow its worker's memory until Temporal suggests a new run,
at thousands of events. A new run costs 5 events and 1 action (its start): it is told its
patches in its input (`patches`), so it records no marker for them."""


class CrWorkflow(Generic[S]):
    """The handlers every CR workflow has; a kind sets `_ref`, `_state`, `_max_history`."""

    _ref: ObjectRef
    _state: S
    _max_history: int | None
    """Continue-as-new once the history is this long, even before Temporal suggests it."""
    _settled_history: int = SETTLED_HISTORY
    """Continue-as-new once the history is this long and the run is `_settled`."""

    @workflow.signal(name=messages.SPEC_CHANGED)
    def spec_changed(self, change: messages.SpecChanged) -> None:
        """The bridge saw a new generation, or resyncs."""
        self._spec_changed(change)

    @workflow.signal(name=messages.OWNED_CHANGED)
    def owned_changed(self, change: messages.OwnedChanged) -> None:
        """An object the CR owns changed."""
        self._owned_changed(change)

    @workflow.signal(name=messages.DELETED)
    def deleted(self, change: messages.Deleted) -> None:
        """The CR is being deleted, or is gone."""
        self._state.gone = self._state.gone or change.gone
        self._state.dirty = True
        self._deleted(change)

    @workflow.signal(name=messages.SUSPEND)
    async def suspend(self, *inputs: object) -> None:
        """A person asks to suspend: written to `spec.suspend`, then reconciled."""
        if await user_signals.accepted(self._ref, messages.SUSPEND, inputs) is not None:
            self._state.user_suspend = True
            self._state.dirty = True

    @workflow.signal(name=messages.RESUME)
    async def resume(self, *inputs: object) -> None:
        """A person asks to resume a suspended CR."""
        if await user_signals.accepted(self._ref, messages.RESUME, inputs) is not None:
            self._state.user_suspend = False
            self._state.dirty = True

    @workflow.query(name=messages.PROGRESS)
    def progress(self) -> messages.Progress:
        """Headline state, what the CR waits for, and the last decisions."""
        return messages.Progress(
            ref=self._ref,
            state=self._headline(),
            summary=self._summary(),
            waiting_for=self._waiting_for(),
            last_decisions=list(self._state.decisions),
            observed_generation=self._state.generation,
        )

    def _publish_state(self) -> None:
        """Keep the `RayState` search attribute on the headline (upserted only on change)."""
        headline = self._headline()
        if workflow.info().typed_search_attributes.get(messages.RAY_STATE) != headline:
            workflow.upsert_search_attributes([messages.RAY_STATE.value_set(headline)])

    # --- what a kind says ---------------------------------------------------------------------

    def _spec_changed(self, change: messages.SpecChanged) -> None:
        """React to `spec_changed`; by default, reconcile again."""
        self._state.dirty = True

    def _owned_changed(self, change: messages.OwnedChanged) -> None:
        """React to `owned_changed`; by default, reconcile again."""
        self._state.dirty = True

    def _deleted(self, change: messages.Deleted) -> None:
        """React to `deleted` beyond marking the CR gone or going; by default, nothing."""

    def _should_continue_as_new(self) -> bool:
        """Whether the history is long enough to go on in a new run (never with a pass due)."""
        if self._state.dirty:
            return False
        info = workflow.info()
        length = info.get_current_history_length()
        too_long = self._max_history is not None and length >= self._max_history
        return (
            too_long
            or info.is_continue_as_new_suggested()
            or (length >= self._settled_history and self._settled())
        )

    def _settled(self) -> bool:
        """Whether nothing is under way, so a new run now keeps only the state; by default no."""
        return False

    def _headline(self) -> str:
        """The state in a word (`ready`, `Running`...), as the CR's status has it."""
        raise NotImplementedError

    def _summary(self) -> str:
        """The workflow's current details, in Markdown."""
        raise NotImplementedError

    def _waiting_for(self) -> list[str]:
        """What the CR waits for now."""
        raise NotImplementedError
