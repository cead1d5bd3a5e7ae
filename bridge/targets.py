"""What the bridge watches, and how narrowly (the same narrowing KubeRay's cache uses)."""

from __future__ import annotations

from dataclasses import dataclass

from activities.kube import client as kube
from crds.constants import CREATED_BY_VALUE, LABEL_CREATED_BY, LABEL_NODE_TYPE
from crds.enums import RayNodeType
from crds.feature_gates import FeatureGates, Gate


@dataclass(frozen=True)
class Target:
    """One kind the bridge lists and watches."""

    kind: str
    resource: kube.Resource
    label_selector: str = ""
    primary: bool = False
    """A ray.io CR with its own workflow (as opposed to an object some CR owns)."""


RAYCLUSTER = Target("RayCluster", kube.RAYCLUSTERS, primary=True)
RAYJOB = Target("RayJob", kube.RAYJOBS, primary=True)
RAYSERVICE = Target("RayService", kube.RAYSERVICES, primary=True)
RAYCRONJOB = Target("RayCronJob", kube.RAYCRONJOBS, primary=True)
_NODE_TYPES = ",".join(node_type.value for node_type in RayNodeType)
POD = Target("Pod", kube.PODS, f"{LABEL_NODE_TYPE} in ({_NODE_TYPES})")
JOB = Target("Job", kube.JOBS, f"{LABEL_CREATED_BY}={CREATED_BY_VALUE}")

ALL_TARGETS = (RAYCLUSTER, RAYJOB, RAYSERVICE, RAYCRONJOB, POD, JOB)
OWNER_KINDS = frozenset({RAYCLUSTER.kind, RAYJOB.kind, RAYSERVICE.kind})
"""The CRs that own pods and Jobs (the bridge maps those to workflows through them)."""


def targets_for(gates: FeatureGates) -> tuple[Target, ...]:
    """What a bridge watches under `gates`: RayCronJobs only with the RayCronJob gate on.

    KubeRay starts its RayCronJob controller only then; with the gate off a RayCronJob is
    stored by the API server and nothing reads it.
    """
    if Gate.RAY_CRON_JOB in gates:
        return ALL_TARGETS
    return tuple(target for target in ALL_TARGETS if target is not RAYCRONJOB)
