"""Install or update our CRDs on a cluster (devcluster at start, or any cluster on request)."""

from __future__ import annotations

import asyncio

from activities.kube import client as kube
from activities.kube.client import JSON, KubeClient
from activities.kube.errors import KubeConflict, KubeUnavailable
from crds.manifests import crd_manifests

CRDS = kube.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
ATTEMPTS = 10


async def install_crds(
    client: KubeClient, pause: float = 0.5, manifests: list[JSON] | None = None
) -> list[str]:
    """Create each CRD (ours, or `manifests`), or replace it when it exists; the CRD names.

    An API server that is busy (429), failing (5xx) or raced by another writer (409 on the
    replace) is asked again, up to `ATTEMPTS` times per CRD, `pause` seconds apart and more.
    """
    names = []
    for manifest in crd_manifests() if manifests is None else manifests:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                await _install(client, manifest)
                break
            except (KubeUnavailable, KubeConflict) as err:
                if attempt == ATTEMPTS or (isinstance(err, KubeConflict) and err.already_exists):
                    raise
                await asyncio.sleep(min(pause * attempt, 5.0))
        names.append(manifest["metadata"]["name"])
    return names


async def _install(client: KubeClient, manifest: JSON) -> None:
    name = manifest["metadata"]["name"]
    try:
        await client.create(CRDS, None, manifest)
    except KubeConflict as err:
        if not err.already_exists:
            raise
        current = await client.get(CRDS, None, name)
        replacement = {**manifest, "metadata": {**manifest["metadata"]}}
        replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.request("PUT", CRDS.path(None, name), body=replacement)
