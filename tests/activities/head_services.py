"""Head Services for tests of dashboard calls: a cluster's own, or an alias in its place.

devcluster runs no workflow, so a test that calls a cluster's dashboard creates the head
Service itself, with the builder the RayCluster workflow uses: owned by the cluster. The
alias is what a tenant would make under that name first, to send calls to another namespace.
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


VICTIM_HEAD = "victim-head-svc.victim.svc.cluster.local"
"""Another namespace's head Service, as cluster DNS names it."""


async def make_alias_service(client: KubeClient, namespace: str, name: str) -> kube.JSON:
    """An ExternalName Service `name` (owned by nobody) aliasing `VICTIM_HEAD`."""
    alias = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "ExternalName",
            "externalName": VICTIM_HEAD,
            "ports": [{"name": "dashboard", "port": 8265}],
        },
    }
    return await client.create(kube.SERVICES, namespace, alias)
