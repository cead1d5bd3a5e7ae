"""What the worker's copies of CRs keep."""

from __future__ import annotations

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.registry import rayjob_essentials, watching
from crds.constants import ANNOTATION_LAST_APPLIED
from tests.activities.raycluster.test_kube_effects import make_cluster
from tests.eventually import eventually


def test_a_copied_rayjob_keeps_all_but_managed_fields_and_the_last_applied_manifest() -> None:
    obj = {
        "metadata": {
            "name": "j",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {ANNOTATION_LAST_APPLIED: '{"spec": "..."}', "team": "a"},
        },
        "spec": {"suspend": True},
    }
    assert rayjob_essentials(obj) == {
        "metadata": {"name": "j", "annotations": {"team": "a"}},
        "spec": {"suspend": True},
    }
    assert "managedFields" in obj["metadata"]  # the original is left as it was


async def test_the_raycluster_copy_keeps_the_last_applied_manifest(client: KubeClient) -> None:
    """Regression: KubeRay copies every annotation of a RayCluster onto its head Ingress, the
    last-applied one included; a copy without it made the Ingress differ (differential test)."""
    ref = await make_cluster(client)
    annotations = {ANNOTATION_LAST_APPLIED: '{"kind": "RayCluster"}'}
    await client.patch(
        kube.RAYCLUSTERS, ref.namespace, ref.name, {"metadata": {"annotations": annotations}}
    )
    async with watching(client) as copies:
        assert copies is not None

        async def held() -> bool:
            return copies.clusters.get(ref.namespace, ref.name) is not None

        await eventually(held, message="the RayCluster in the copy")
        cached = copies.clusters.get(ref.namespace, ref.name) or {}
    assert cached["metadata"]["annotations"] == annotations
