"""Every workflow class the worker registers.

One list that the worker, the replay tests and anything else that needs "all our
workflows" read, so adding a workflow is one line here.
"""

from __future__ import annotations

from workflows.diagnostics import PingWorkflow
from workflows.raycluster.workflow import RayClusterWorkflow
from workflows.raycronjob.firing import RayCronJobFiringWorkflow
from workflows.raycronjob.workflow import RayCronJobWorkflow
from workflows.rayjob.workflow import RayJobWorkflow
from workflows.rayservice.upgrade_child import RayServiceUpgradeWorkflow
from workflows.rayservice.workflow import RayServiceWorkflow

WORKFLOWS: list[type] = [
    PingWorkflow,
    RayClusterWorkflow,
    RayJobWorkflow,
    RayServiceWorkflow,
    RayServiceUpgradeWorkflow,
    RayCronJobWorkflow,
    RayCronJobFiringWorkflow,
]
"""Workflow classes, each decorated with `@workflow.defn`."""
