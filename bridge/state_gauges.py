"""KubeRay's state gauges (`kuberay_*_info`, `*_deployment_status`, `*_condition_*`), per scrape.

The bridge serves them (see `activities.kuberay_metrics` for why the bridge): each scrape lists the
watched kinds in the watched namespaces, as KubeRay's collectors list their cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeError
from activities.kuberay_metrics import render, state_samples

logger = logging.getLogger(__name__)


async def cr_state(client: KubeClient, namespaces: Sequence[str | None] = (None,)) -> str:
    """The state gauges of every RayCluster, RayJob and RayService, in the text format.

    Args:
        client: The Kubernetes API.
        namespaces: Where to list; `None` is every namespace (the bridge's `namespaces`).

    Returns:
        The exposition text; empty when listing fails (logged), as KubeRay's collectors
        report nothing when their list fails.
    """
    clusters: list[kube.JSON] = []
    jobs: list[kube.JSON] = []
    services: list[kube.JSON] = []
    try:
        for namespace in namespaces:
            clusters += await client.list_all(kube.RAYCLUSTERS, namespace)
            jobs += await client.list_all(kube.RAYJOBS, namespace)
            services += await client.list_all(kube.RAYSERVICES, namespace)
    except KubeError as err:
        logger.warning("metrics: listing ray.io objects failed: %s", err)
        return ""
    return render(state_samples(clusters, jobs, services))
