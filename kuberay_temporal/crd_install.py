"""Install or update our CRDs on a cluster (devcluster at start, or any cluster on request)."""

from __future__ import annotations

from activities import kube
from activities.errors import KubeConflict
from activities.kube import KubeClient
from crds.manifests import crd_manifests

CRDS = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)


async def install_crds(client: KubeClient) -> list[str]:
    """Create each CRD, or replace it when it exists; returns the CRD names."""
    names = []
    for manifest in crd_manifests():
        name = manifest["metadata"]["name"]
        try:
            await client.create(CRDS, None, manifest)
        except KubeConflict as err:
            if not err.already_exists:
                raise
            current = await client.get(CRDS, None, name)
            manifest["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.request("PUT", CRDS.path(None, name), body=manifest)
        names.append(name)
    return names
