"""kube-controller-manager's workload controllers, run inside devcluster.

KubeRay's samples deploy Jobs, Deployments and StatefulSets beside their custom resources
(the submitter Job of a RayJob, the Redis of GCS fault tolerance), so devcluster runs the
controllers that turn those into pods. Each module keeps its decisions in pure functions and
a small reconciler that applies them; `reconciling.Loop` runs a reconciler as a controller.
"""

from __future__ import annotations

from devcluster.controllers.deployments import DeploymentController
from devcluster.controllers.jobs import JobController
from devcluster.controllers.reconciling import Loop
from devcluster.controllers.replica_sets import ReplicaSetController
from devcluster.controllers.stateful_sets import StatefulSetController


def workload_controllers(job_backoff: float = 10.0) -> list[Loop]:
    """Return the Job, Deployment, ReplicaSet and StatefulSet controllers, ready to run."""
    return [
        Loop(JobController(backoff=job_backoff)),
        Loop(DeploymentController()),
        Loop(ReplicaSetController()),
        Loop(StatefulSetController()),
    ]
