"""Our CRDs against KubeRay's on a real kube-apiserver: every sample is stored the same.

The API server is the judge of what a CRD means: it refuses a schema that is not structural
or a CEL rule that does not compile, and it prunes and defaults what it stores. So both sets
of CRDs are installed in turn on one real control plane, and each ray.io document of KubeRay's
samples is created with `dryRun=All` under each: the answer is the object as it would be
stored. The stored objects must be equal, and so must the set of documents refused; every
ray.io kind of the samples (RayCronJob too) is served by both sets.

One difference exists by design and no sample shows it: inside an embedded Kubernetes object
(a pod template) our CRDs keep a field Kubernetes does not know, where KubeRay's prune it
(`crds.manifests` says why); the API server then drops it when the controller creates the Pod.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeError, KubeNotFound
from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.crd_install import CRDS
from tests.eventually import eventually
from tests.reference import KUBERAY_CRDS, KUBERAY_SAMPLES, REPO_ROOT, sample_files

OUR_CRDS = REPO_ROOT / "deploy" / "crds"
NAMESPACE = "crd-samples"

Doc = dict[str, Any]
Outcome = tuple[str, Any]
"""("stored", the object without its metadata) or ("refused", the API server's message)."""


def _load(path: Any) -> list[Doc]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # KubeRay's CRDs are ~1 MB each
    return [doc for doc in yaml.load_all(path.read_text(), Loader=loader) if doc]


def ray_documents() -> dict[str, Doc]:
    """Every ray.io document of KubeRay's samples, by `file#index`."""
    found = {}
    for path in sample_files():
        for index, doc in enumerate(_load(path)):
            if str(doc.get("apiVersion", "")).startswith("ray.io/"):
                found[f"{path.relative_to(KUBERAY_SAMPLES)}#{index}"] = doc
    return found


async def _replace_ray_crds(client: KubeClient, crds: list[Doc]) -> None:
    """Delete every ray.io CRD, create `crds`, and wait until each of their kinds is served."""
    for crd in await client.list_all(CRDS, None):
        if crd["spec"]["group"] == "ray.io":
            await client.delete(CRDS, None, crd["metadata"]["name"])

    async def ray_crds_gone() -> bool:
        return not [c for c in await client.list_all(CRDS, None) if c["spec"]["group"] == "ray.io"]

    await eventually(ray_crds_gone, within=60, message="the ray.io CRDs deleted")
    for crd in crds:
        await client.create(CRDS, None, crd)
    for crd in crds:
        name = crd["metadata"]["name"]
        stored = await eventually(
            lambda name=name: _established(client, name), within=60, message=f"{name} served"
        )
        types = {c["type"] for c in stored["status"]["conditions"] if c["status"] == "True"}
        assert "NonStructuralSchema" not in types, name


async def _established(client: KubeClient, name: str) -> Doc | None:
    """The CRD once it is Established and its resource answers a list, else None."""
    crd = await client.get(CRDS, None, name)
    conditions = (crd.get("status") or {}).get("conditions") or []
    if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
        return None
    spec = crd["spec"]
    resource = kube.Resource(spec["group"], spec["versions"][0]["name"], spec["names"]["plural"])
    try:
        await client.list_all(resource, NAMESPACE)
    except KubeNotFound:
        return None
    return crd


async def _store_dry(client: KubeClient, documents: dict[str, Doc]) -> dict[str, Outcome]:
    """What the API server would store for each document, or its message refusing it."""
    outcomes: dict[str, Outcome] = {}
    for key, doc in documents.items():
        body = copy.deepcopy(doc)
        body["metadata"]["namespace"] = NAMESPACE
        group, version = doc["apiVersion"].split("/")
        resource = kube.Resource(group, version, f"{doc['kind'].lower()}s")
        try:
            stored = await client.request(
                "POST", resource.path(NAMESPACE), query={"dryRun": "All"}, body=body
            )
        except KubeError as err:
            outcomes[key] = ("refused", str(err))
            continue
        outcomes[key] = ("stored", {k: v for k, v in stored.items() if k != "metadata"})
    return outcomes


def differences(theirs: Any, ours: Any, path: str = "") -> Iterator[str]:
    """Where two JSON values differ, one line per field."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        for key in sorted(theirs.keys() | ours.keys()):
            if key not in ours:
                yield f"{path}.{key}: only KubeRay's has {json.dumps(theirs[key])[:120]}"
            elif key not in theirs:
                yield f"{path}.{key}: only ours has {json.dumps(ours[key])[:120]}"
            else:
                yield from differences(theirs[key], ours[key], f"{path}.{key}")
    elif isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        for index, (mine, other) in enumerate(zip(theirs, ours, strict=True)):
            yield from differences(mine, other, f"{path}[{index}]")
    elif theirs != ours:
        yield f"{path}: KubeRay's {json.dumps(theirs)[:120]}, ours {json.dumps(ours)[:120]}"


@pytest.mark.timeout(600)
async def test_kuberays_samples_are_stored_the_same_under_our_crds(
    control_plane: ControlPlane,
) -> None:
    documents = ray_documents()
    assert len(documents) > 80, "KubeRay's samples are incomplete"
    kuberay_crds = [crd for path in sorted(KUBERAY_CRDS.glob("*.yaml")) for crd in _load(path)]
    our_crds = [crd for path in sorted(OUR_CRDS.glob("*.yaml")) for crd in _load(path)]
    client = await kube.connect(str(control_plane.kubeconfig_path))
    try:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        await client.create_or_get(kube.NAMESPACES, None, namespace)
        # KubeRay's first, ours last: the tests after this one find our CRDs installed.
        await _replace_ray_crds(client, kuberay_crds)
        theirs = await _store_dry(client, documents)
        await _replace_ray_crds(client, our_crds)
        ours = await _store_dry(client, documents)
    finally:
        await client.close()

    assert "RayCronJob" in {doc["kind"] for doc in documents.values()}
    compared = sorted(documents)

    refused = {
        key: {
            "KubeRay's": theirs[key][1] if theirs[key][0] == "refused" else "stored",
            "ours": ours[key][1] if ours[key][0] == "refused" else "stored",
        }
        for key in compared
        if theirs[key][0] != ours[key][0]
    }
    assert refused == {}, "refused under one set of CRDs only"

    stored_differently = {
        key: list(differences(theirs[key][1], ours[key][1]))
        for key in compared
        if theirs[key] != ours[key] and theirs[key][0] == "stored"
    }
    assert stored_differently == {}
    assert any(outcome == "stored" for outcome, _ in ours.values())
