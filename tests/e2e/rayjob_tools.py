"""RayJobs through kubectl: apply our samples, wait for a state, read what the operator made."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from tests.e2e.conftest import LocalStack
from tests.e2e.ray_tools import dashboard_path
from tests.eventually import eventually
from tests.reference import REPO_ROOT

SAMPLES = REPO_ROOT / "samples"


def sample(mode: str) -> dict[str, Any]:
    """Our sample `samples/rayjob.<mode>-mode.yaml`."""
    return dict(yaml.safe_load((SAMPLES / f"rayjob.{mode}-mode.yaml").read_text()))


def adapt(doc: dict[str, Any], name: str, *, workers: bool = True, **spec: Any) -> dict[str, Any]:
    """The sample under another name, with spec fields replaced (None removes one)."""
    doc = copy.deepcopy(doc)
    doc["metadata"]["name"] = name
    for key, value in spec.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    if not workers and "rayClusterSpec" in doc["spec"]:
        doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    return doc


async def apply(stack: LocalStack, doc: dict[str, Any]) -> None:
    path = stack.state_dir.parent / f"{doc['kind']}-{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    await stack.kubectl("apply", "-f", str(path))


async def get(stack: LocalStack, kind: str, name: str) -> dict[str, Any] | None:
    raw = await stack.kubectl("get", kind, name, "-o", "json", "--ignore-not-found")
    return dict(json.loads(raw)) if raw.strip() else None


async def absent(stack: LocalStack, kind: str, name: str) -> bool:
    return await get(stack, kind, name) is None


async def status(stack: LocalStack, name: str) -> dict[str, Any]:
    """The RayJob's status ({} while it has none)."""
    found = await get(stack, "rayjob", name)
    return dict((found or {}).get("status") or {})


async def reaches(stack: LocalStack, name: str, state: str, within: float = 180) -> dict[str, Any]:
    """The RayJob's status once its jobDeploymentStatus is `state`; fails with its Events."""

    async def probe() -> dict[str, Any] | None:
        current = await status(stack, name)
        return current if current.get("jobDeploymentStatus") == state else None

    try:
        return await eventually(probe, within=within, message=f"{name} {state}")
    except AssertionError as err:
        events = await stack.kubectl("get", "events", "-o", "wide", check=False)
        raise AssertionError(f"{err}\nstatus: {await status(stack, name)}\n{events}") from None


async def delete(stack: LocalStack, kind: str, name: str) -> None:
    await stack.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false")
    await eventually(lambda: absent(stack, kind, name), within=120, message=f"{kind} {name} gone")


async def ray_jobs(stack: LocalStack, cluster: str) -> list[dict[str, Any]]:
    """The jobs the cluster's dashboard lists ([] while it does not answer)."""
    raw = await stack.kubectl("get", "--raw", dashboard_path(cluster, "api/jobs/"), check=False)
    try:
        return list(json.loads(raw))
    except ValueError:
        return []


async def cluster_pods(stack: LocalStack, cluster: str, node_type: str = "") -> list[str]:
    """Names of the cluster's pods not being deleted, of one node type if given."""
    selector = f"ray.io/cluster={cluster}" + (f",ray.io/node-type={node_type}" if node_type else "")
    raw = await stack.kubectl("get", "pods", "-l", selector, "-o", "json")
    return [
        p["metadata"]["name"]
        for p in json.loads(raw)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]


async def clusters_of_job(stack: LocalStack, name: str) -> list[str]:
    """Names of the RayClusters a RayJob created (labelled as originating from it)."""
    raw = await stack.kubectl("get", "rayclusters", "-o", "json")
    return [
        c["metadata"]["name"]
        for c in json.loads(raw)["items"]
        if c["metadata"].get("labels", {}).get("ray.io/originated-from-cr-name") == name
    ]
