"""The RayJob workflow's patched behaviours and the coverings that stand for them.

Each patch names a change of the workflow's commands; histories recorded before it replay the
old path. `COVERINGS` lists, newest first, the patches standing for several (`workflows.patches`).
"""

from __future__ import annotations

from workflows import messages

LOCAL_PATCH = "rayjob-local-calls"
"""Kubernetes calls and Ray submissions run as local activities, in the workflow task that
decides them: no dispatch through the server, no workflow task for each result."""
IDLE_PATCH = "rayjob-idle-without-resync"
"""A finished, failed or suspended RayJob with no clock running waits for signals only."""
UNREADABLE_PATCH = "rayjob-unreadable-validation-failed"
"""A RayJob unreadable from its first read is refused like a bad edit (histories before wait)."""
STALE_VIEW_PATCH = "rayjob-finished-submitter-asks-ray-first"
"""A finished submitter with Ray's last answer not terminal: ask Ray before deciding."""
NAMES_PATCH = "rayjob-names-from-the-kubernetes-alphabet"
"""Job ids and cluster names are drawn as KubeRay draws them (`workflows.names`); workflows
that began before draw theirs as then, so a replay names the same cluster."""
CLUSTER_STATUS_PATCH = "rayjob-cluster-status-while-running"
"""`status.rayClusterStatus` is copied from the cluster only while the job runs, as KubeRay
does; workflows that began before copy it while Initializing too (their writes replay)."""
SIDECAR_END_PATCH = "rayjob-sidecar-end-waits-for-cluster"
"""A SidecarMode job's end waits briefly for its cluster's status to show the exited sidecar."""
STEADY_TIMER_PATCH = "rayjob-steady-resync-timer"
"""A wait keeps the running timer when it fires soon enough (`workflows.resync`)."""
LOCAL_CALLS_ALL_PATCH = "rayjob-patches-through-local-calls"
"""Stood for every patch above and `LOCAL_PATCH` until the steady timer; its runs replay."""
LOCAL_CALLS_COVERED = frozenset(
    {
        IDLE_PATCH,
        UNREADABLE_PATCH,
        STALE_VIEW_PATCH,
        NAMES_PATCH,
        CLUSTER_STATUS_PATCH,
        SIDECAR_END_PATCH,
        LOCAL_PATCH,
    }
)
REFIT_PATCH = "rayjob-resync-replaces-an-early-timer"
"""A wait replaces a running timer that would only bring a pass with nothing due (`resync`)."""
STEADY_TIMER_ALL_PATCH = "rayjob-patches-through-steady-timer"
"""Stood for every patch above until the early timer's; its runs still replay."""
STEADY_TIMER_COVERED = LOCAL_CALLS_COVERED | {STEADY_TIMER_PATCH}
ALL_PATCH = messages.COVERING_PATCHES["RayJob"]
"""Stands for every patch above: a run started with it in its input records
no marker, one started without it one (`patches`)."""
COVERED = STEADY_TIMER_COVERED | {REFIT_PATCH}
COVERINGS = (
    (ALL_PATCH, COVERED),
    (STEADY_TIMER_ALL_PATCH, STEADY_TIMER_COVERED),
    (LOCAL_CALLS_ALL_PATCH, LOCAL_CALLS_COVERED),
)
