"""A RayCluster's head Service as its workflow would make it, for tests of dashboard calls.

devcluster runs no workflow, so a test that calls a cluster's dashboard creates the head
Service itself, with the builder the RayCluster workflow uses: owned by the cluster.
"""

from __future__ import annotations

from activities.builders.cluster_services import build_head_service
from activities.kube import client as kube
from activities.kube.client import KubeClient
from crds.raycluster import RayCluster


async def make_head_service(client: KubeClient, namespace: str, cluster_name: str) -> kube.JSON:
    """Create the head Service of RayCluster `cluster_name`, owned by it; return it as stored."""
    cluster = RayCluster.model_validate(await client.get(kube.RAYCLUSTERS, namespace, cluster_name))
    return await client.create(kube.SERVICES, namespace, build_head_service(cluster))
