"""A CR in one namespace cannot reach another namespace's objects through a crafted name.

On the whole local stack (simulated Ray), on devcluster and on the real control plane:
namespace `victim` runs a RayCluster and holds a Secret with a Ray token; namespace
`attacker` applies RayJobs (HTTPMode and K8sJobMode) whose head Service is named
`../../victim/services/victim-head-svc`, a RayJob whose clusterSelector names
`../../victim/rayclusters/victim`, and a RayCluster whose auth Secret is
`../../victim/secrets/victim-token`. Before names were checked, the HTTPMode RayJob submitted
its entrypoint to the victim's cluster and the worker sent the victim's token away. Now each
attacker CR is refused with the field that holds the bad name, nothing is created in
`attacker`, no workflow runs anything past its first read, the victim's Ray has no job, and
nothing in `victim` changed.

Then the names are all valid but DNS does the hop: a RayJob whose head Service is an
ExternalName alias of `victim-head-svc.victim.svc.cluster.local` (refused by validation), and a
RayJob that borrows the attacker's own RayCluster, whose head Service name the attacker took
first with such an alias (the worker never calls a Service its cluster does not own).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.e2e.test_metrics import apply
from tests.eventually import eventually
from tests.history_scan import activity_calls
from tests.reference import REPO_ROOT
from workflows import messages

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

VICTIM, ATTACKER = "victim", "attacker"
_HEAD_SVC = "../../victim/services/victim-head-svc"
_VICTIM_DNS = "victim-head-svc.victim.svc.cluster.local"
# All a refused CR's workflow may do: read itself, write its own status, finalizer and Event.
_ALLOWED = {
    "read_raycluster",
    "read_rayjob",
    "write_raycluster_status",
    "write_rayjob_status",
    "set_rayjob_finalizer",
    "record_event",
}


def _in(namespace: str, doc: dict[str, Any]) -> dict[str, Any]:
    doc["metadata"]["namespace"] = namespace
    return doc


def victim_cluster() -> dict[str, Any]:
    doc = yaml.safe_load((REPO_ROOT / "samples" / "raycluster.yaml").read_text())
    doc["metadata"]["name"] = "victim"
    doc["spec"].pop("workerGroupSpecs")
    return _in(VICTIM, doc)


def attacker_rayjob(name: str, mode: str, **spec: Any) -> dict[str, Any]:
    doc = yaml.safe_load((REPO_ROOT / "samples" / "rayjob.http-mode.yaml").read_text())
    doc["metadata"]["name"] = name
    doc["spec"]["rayClusterSpec"].pop("workerGroupSpecs", None)
    doc["spec"]["rayClusterSpec"]["headGroupSpec"]["headService"] = {
        "metadata": {"name": _HEAD_SVC}
    }
    doc["spec"].update(submissionMode=mode, entrypoint="echo stolen", **spec)
    return _in(ATTACKER, doc)


async def objects_in(stack: LocalStack, namespace: str) -> dict[str, str]:
    """`kind/name` → resourceVersion of everything a RayCluster or RayJob could touch."""
    kinds = "pods,services,secrets,jobs.batch,rayclusters,rayjobs,rayservices,configmaps"
    raw = await stack.kubectl("get", kinds, "-n", namespace, "-o", "json")
    return {
        f"{item['kind']}/{item['metadata']['name']}": item["metadata"]["resourceVersion"]
        for item in json.loads(raw)["items"]
    }


async def refused_rayjob(stack: LocalStack, name: str) -> dict[str, Any] | None:
    raw = await stack.kubectl("get", "rayjob", name, "-n", ATTACKER, "-o", "json")
    status = json.loads(raw).get("status") or {}
    return dict(status) if status.get("jobDeploymentStatus") == "ValidationFailed" else None


async def ray_jobs(stack: LocalStack) -> list[Any]:
    path = f"/api/v1/namespaces/{VICTIM}/services/victim-head-svc:dashboard/proxy/api/jobs/"
    return list(json.loads(await stack.kubectl("get", "--raw", path)))


async def waiting_for(stack: LocalStack, kind: str, name: str) -> list[str]:
    """What the CR's workflow says it waits for (its `progress` query)."""
    query = f"RayKind = '{kind}' AND RayNamespace = '{ATTACKER}' AND RayName = '{name}'"
    async for execution in stack.client.list_workflows(query):
        handle = stack.client.get_workflow_handle(execution.id)
        progress: messages.Progress = await handle.query(
            messages.PROGRESS, result_type=messages.Progress
        )
        return progress.waiting_for
    return []


async def activities_of(stack: LocalStack, kind: str, name: str) -> list[str]:
    query = f"RayKind = '{kind}' AND RayNamespace = '{ATTACKER}' AND RayName = '{name}'"
    found: list[str] = []
    async for execution in stack.client.list_workflows(query):
        handle = stack.client.get_workflow_handle(execution.id, run_id=execution.run_id)
        scheduled, local = activity_calls((await handle.fetch_history()).events)
        found += scheduled + local
    return found


@pytest.mark.parametrize("control_plane", ["devcluster", "kubernetes"])
async def test_crafted_names_reach_nothing_in_another_namespace(
    tmp_path: Path, control_plane: str
) -> None:
    async with running_stack(tmp_path, "simulated", control_plane=control_plane) as stack:
        await crafted_names_reach_nothing(stack)


async def crafted_names_reach_nothing(stack: LocalStack) -> None:
    for namespace in (VICTIM, ATTACKER):
        await stack.kubectl("create", "namespace", namespace)
    token = "victim-secret-token"
    await stack.kubectl(
        "create",
        "secret",
        "generic",
        "victim-token",
        "-n",
        VICTIM,
        f"--from-literal=auth_token={token}",
    )
    await apply(stack, victim_cluster())

    async def victim_ready() -> bool:
        raw = await stack.kubectl("get", "raycluster", "victim", "-n", VICTIM, "-o", "json")
        return (json.loads(raw).get("status") or {}).get("state") == "ready"

    await eventually(victim_ready, within=120, message="the victim's RayCluster ready")
    before = await objects_in(stack, VICTIM)

    await apply(stack, attacker_rayjob("http-steal", "HTTPMode"))
    await apply(stack, attacker_rayjob("k8s-steal", "K8sJobMode"))
    selector = attacker_rayjob("selector-steal", "HTTPMode")
    del selector["spec"]["rayClusterSpec"]
    selector["spec"]["clusterSelector"] = {"ray.io/cluster": "../../victim/rayclusters/victim"}
    await apply(stack, selector)
    stealer = victim_cluster()
    stealer["metadata"]["name"] = "token-steal"
    stealer["spec"]["authOptions"] = {
        "mode": "token",
        "secretName": "../../victim/secrets/victim-token",
    }
    await apply(stack, _in(ATTACKER, stealer))

    head_field = "spec.rayClusterSpec.headGroupSpec.headService.metadata.name"
    for name, field in (
        ("http-steal", head_field),
        ("k8s-steal", head_field),
        ("selector-steal", "spec.clusterSelector[ray.io/cluster]"),
    ):
        status = await eventually(
            lambda name=name: refused_rayjob(stack, name),
            within=120,
            message=f"RayJob {name} ValidationFailed",
        )
        assert field in status["message"], status

    async def refused_event() -> dict[str, Any] | None:
        raw = await stack.kubectl("get", "events", "-n", ATTACKER, "-o", "json")
        events = [
            e
            for e in json.loads(raw)["items"]
            if e["involvedObject"]["name"] == "token-steal"
            and e["reason"] == "InvalidRayClusterSpec"
        ]
        return events[0] if events else None

    event = await eventually(refused_event, within=120, message="the RayCluster refused")
    assert "spec.authOptions.secretName" in event["message"], event

    for kind, name in (
        ("RayJob", "http-steal"),
        ("RayJob", "k8s-steal"),
        ("RayJob", "selector-steal"),
        ("RayCluster", "token-steal"),
    ):
        ran = await activities_of(stack, kind, name)
        assert ran, f"{kind} {name} has no workflow"
        assert set(ran) <= _ALLOWED, (kind, name, ran)
    created = await objects_in(stack, ATTACKER)
    created.pop("ConfigMap/kube-root-ca.crt", None)  # every namespace's, on a real cluster
    assert all(key.split("/")[0] in ("RayJob", "RayCluster", "Secret") for key in created), created
    assert not [key for key in created if key.startswith("Secret/")], created
    assert await ray_jobs(stack) == []
    assert await objects_in(stack, VICTIM) == before
    assert token not in stack.log.read_text()
    await dns_reaches_nothing_in_another_namespace(stack)


async def dns_reaches_nothing_in_another_namespace(stack: LocalStack) -> None:
    before = await objects_in(stack, VICTIM)
    alias = attacker_rayjob("alias-steal", "HTTPMode")
    alias["spec"]["rayClusterSpec"]["headGroupSpec"]["headService"] = {
        "spec": {"type": "ExternalName", "externalName": _VICTIM_DNS}
    }
    await apply(stack, alias)
    status = await eventually(
        lambda: refused_rayjob(stack, "alias-steal"), within=120, message="alias-steal refused"
    )
    assert "spec.rayClusterSpec.headGroupSpec.headService.spec.type" in status["message"]

    # The attacker's own cluster, whose head Service's name an alias took first.
    taken = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "own-head-svc", "namespace": ATTACKER},
        "spec": {
            "type": "ExternalName",
            "externalName": _VICTIM_DNS,
            "ports": [{"name": "dashboard", "port": 8265}],
        },
    }
    await apply(stack, taken)
    own = victim_cluster()
    own["metadata"]["name"] = "own"
    await apply(stack, _in(ATTACKER, own))
    borrow = attacker_rayjob("borrow-steal", "HTTPMode")
    del borrow["spec"]["rayClusterSpec"]
    borrow["spec"]["clusterSelector"] = {"ray.io/cluster": "own"}
    await apply(stack, borrow)

    async def refused_head() -> list[str] | None:
        waiting = await waiting_for(stack, "RayJob", "borrow-steal")
        return waiting if any("not owned by RayCluster own" in w for w in waiting) else None

    await eventually(refused_head, within=180, message="borrow-steal refusing own-head-svc")
    assert await ray_jobs(stack) == []
    assert await objects_in(stack, VICTIM) == before
