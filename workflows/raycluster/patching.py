"""The RayCluster workflow's patched behaviours and the coverings that stand for them.

Each patch names a change of the workflow's commands; histories recorded before it replay the
old path. `COVERINGS` lists, newest first, the patches standing for several (`workflows.patches`).
"""

from __future__ import annotations

from workflows import messages

LOCAL_READ_PATCH = "raycluster-local-read"
"""The pass's read runs as a local activity: one dispatch and one workflow task fewer."""
LOCAL_WRITES_PATCH = "raycluster-local-writes"
"""The pass's writes (pods and Services, status, Events, the finalizer) run as local
activities too: a pass is one workflow task, not one per call."""
STEADY_TIMER_PATCH = "raycluster-steady-resync-timer"
"""A wait keeps the running resync timer when it fires soon enough (`resync`)."""
SETTLED_RUN_PATCH = "raycluster-settled-new-run"
"""A long run with nothing under way continues as new (`CrWorkflow._should_continue_as_new`)."""
REFIT_PATCH = "raycluster-resync-replaces-an-early-timer"
"""A wait replaces a running timer that would only bring a pass with nothing due (`resync`)."""
CREATED_PODS_PATCH = "raycluster-status-counts-created-pods"
"""The pass that creates pods counts them in the status it writes, and does not look again
soon for them: news of them wakes the next pass."""
SUSPEND_STEPS_PATCH = "raycluster-suspend-steps-at-once"
"""A pass whose suspend phase would advance again on what it read makes the next pass due: a
resume that comes while pods terminate needs one pass to finish suspending, one to start."""
ALL_SUSPEND_STEPS_PATCH = messages.COVERING_PATCHES["RayCluster"]
"""Stands for the seven patches above: a run started with it in its input records
no marker, one started without it one (`patches`)."""
ALL_CREATED_PODS_PATCH = "raycluster-patches-through-created-pods"
"""Stood for the first six until the suspend steps'; its runs still replay."""
ALL_REFIT_PATCH = "raycluster-patches-through-early-timer"
"""Stood for the first five until the created pods'; its runs still replay."""
ALL_SETTLED_PATCH = "raycluster-patches-through-settled-run"
"""Stood for the first four until the early timer's; its runs still replay."""
ALL_PATCH = "raycluster-patches-through-steady-timer"
"""Stood for the first three until the settled run; its runs still replay."""
LOCAL_WRITES_ALL_PATCH = "raycluster-patches-through-local-writes"
"""Stood for the local read and writes until the steady timer; its runs still replay."""

_OLDER = frozenset({LOCAL_READ_PATCH, LOCAL_WRITES_PATCH, STEADY_TIMER_PATCH})
_CREATED = _OLDER | {SETTLED_RUN_PATCH, REFIT_PATCH, CREATED_PODS_PATCH}
COVERINGS = (
    (ALL_SUSPEND_STEPS_PATCH, _CREATED | {SUSPEND_STEPS_PATCH}),
    (ALL_CREATED_PODS_PATCH, _CREATED),
    (ALL_REFIT_PATCH, _OLDER | {SETTLED_RUN_PATCH, REFIT_PATCH}),
    (ALL_SETTLED_PATCH, _OLDER | {SETTLED_RUN_PATCH}),
    (ALL_PATCH, _OLDER),
    (LOCAL_WRITES_ALL_PATCH, frozenset({LOCAL_READ_PATCH, LOCAL_WRITES_PATCH})),
)
