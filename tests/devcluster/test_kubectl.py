"""The real kubectl against devcluster: CRDs, KubeRay samples and everyday commands."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.devcluster.conftest import Kubectl, read_lines_until
from tests.reference import KUBERAY_CRDS, KUBERAY_SAMPLES

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {tier: web}
data:
  mode: "{mode}"
"""


def _kinds(path: Path) -> set[str]:
    return {d["kind"] for d in yaml.safe_load_all(path.read_text()) if d}


def _uses_generate_name(path: Path) -> bool:
    return any(
        "generateName" in (d.get("metadata") or {})
        for d in yaml.safe_load_all(path.read_text())
        if d
    )


async def test_client_side_apply_of_a_large_crd_hits_the_annotation_limit(
    kubectl: Kubectl, ray_crds: list[str]
) -> None:
    result = await kubectl.run("apply", "-f", str(KUBERAY_CRDS / "ray.io_rayjobs.yaml"))
    assert result.code != 0
    assert "metadata.annotations: Too long: may not be more than 262144 bytes" in result.err


async def test_every_kuberay_sample_whose_kinds_are_served_applies(
    kubectl: Kubectl, ray_crds: list[str], namespace: str
) -> None:
    listing = await kubectl.ok("api-resources", "--no-headers")
    kinds = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    applied, skipped = 0, []
    for path in sorted(KUBERAY_SAMPLES.rglob("*.yaml")):
        if not _kinds(path) <= kinds:
            skipped.append(path.name)
            continue
        verb = ["create"] if _uses_generate_name(path) else ["apply"]
        await kubectl.ok(*verb, "-n", namespace, "-f", str(path))
        applied += 1
    assert applied >= 80, f"only {applied} samples applied; skipped {skipped}"
    listed = await kubectl.ok(
        "get", "rayclusters,rayjobs,rayservices", "-n", namespace, "-o", "name"
    )
    assert "raycluster.ray.io/raycluster-complete" in listed
    # Re-applying a sample writes nothing: kubectl's patch only restates defaulted lists.
    get = (
        "get",
        "raycluster",
        "raycluster-complete",
        "-n",
        namespace,
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    )
    before = await kubectl.ok(*get)
    await kubectl.ok(
        "apply", "-n", namespace, "-f", str(KUBERAY_SAMPLES / "ray-cluster.complete.yaml")
    )
    assert await kubectl.ok(*get) == before


async def test_get_describe_explain_and_printer_columns(
    kubectl: Kubectl, ray_crds: list[str], namespace: str
) -> None:
    sample = KUBERAY_SAMPLES / "ray-cluster.complete.yaml"
    await kubectl.ok("apply", "-n", namespace, "-f", str(sample))
    table = await kubectl.ok("get", "rayclusters", "-n", namespace)
    header = table.splitlines()[0].split()
    assert header[:3] == ["NAME", "DESIRED", "WORKERS"] and "STATUS" in header
    await kubectl.ok(
        "patch",
        "raycluster",
        "raycluster-complete",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"state":"ready","desiredWorkerReplicas":1}}',
    )
    row = (
        await kubectl.ok("get", "raycluster", "raycluster-complete", "-n", namespace)
    ).splitlines()[1]
    assert row.split()[:3] == ["raycluster-complete", "1", "ready"] or "ready" in row
    described = await kubectl.ok("describe", "raycluster", "raycluster-complete", "-n", namespace)
    assert "Kind:         RayCluster" in described and "Head Group Spec" in described
    explained = await kubectl.ok("explain", "rayclusters.spec.workerGroupSpecs")
    assert "KIND:       RayCluster" in explained and "groupName" in explained
    short = await kubectl.ok("get", "cm", "-n", "kube-system")
    assert "No resources" not in short or short == ""


async def test_apply_label_patch_delete_for_a_builtin(kubectl: Kubectl, namespace: str) -> None:
    await kubectl.ok("apply", "-n", namespace, "-f", "-", stdin=CONFIGMAP.replace("{mode}", "a"))
    out = await kubectl.ok(
        "apply", "-n", namespace, "-f", "-", stdin=CONFIGMAP.replace("{mode}", "b")
    )
    assert "configured" in out
    await kubectl.ok("label", "configmap", "settings", "-n", namespace, "owner=me")
    await kubectl.ok(
        "patch", "configmap", "settings", "-n", namespace, "-p", '{"data":{"extra":"1"}}'
    )
    await kubectl.ok(
        "patch",
        "configmap",
        "settings",
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/data/mode"}]',
    )
    obj = json.loads(
        await kubectl.ok("get", "configmap", "settings", "-n", namespace, "-o", "json")
    )
    assert obj["data"] == {"extra": "1"}
    assert obj["metadata"]["labels"] == {"tier": "web", "owner": "me"}
    selected = await kubectl.ok("get", "cm", "-n", namespace, "-l", "owner=me", "-o", "name")
    assert selected.strip() == "configmap/settings"
    await kubectl.ok("delete", "configmap", "settings", "-n", namespace)
    gone = await kubectl.run("get", "configmap", "settings", "-n", namespace)
    assert gone.code == 1 and 'configmaps "settings" not found' in gone.err


async def test_strategic_merge_patch_merges_containers_by_name(
    kubectl: Kubectl, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "containers": [
                {"name": "a", "image": "busybox", "env": [{"name": "X", "value": "1"}]},
                {"name": "b", "image": "busybox"},
            ]
        },
    }
    await kubectl.ok("create", "-n", namespace, "-f", "-", stdin=json.dumps(pod))
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}
    await kubectl.ok("patch", "pod", "web", "-n", namespace, "-p", json.dumps(patch))
    got = json.loads(await kubectl.ok("get", "pod", "web", "-n", namespace, "-o", "json"))
    containers = {c["name"]: c for c in got["spec"]["containers"]}
    assert set(containers) == {"a", "b"}
    assert containers["a"]["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]


async def test_wait_and_watch(kubectl: Kubectl, ray_crds: list[str], namespace: str) -> None:
    sample = KUBERAY_SAMPLES / "ray-job.sample.yaml"
    await kubectl.ok("apply", "-n", namespace, "-f", str(sample))
    watcher = await kubectl.stream("get", "rayjobs", "-n", namespace, "-w", "-o", "name")
    waiter = kubectl.start(
        "wait",
        "-n",
        namespace,
        "--for=jsonpath={.status.jobDeploymentStatus}=Running",
        "rayjob/rayjob-sample",
        "--timeout=20s",
    )
    await kubectl.ok(
        "patch",
        "rayjob",
        "rayjob-sample",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"jobDeploymentStatus":"Running"}}',
    )
    done = await waiter
    assert done.code == 0 and "condition met" in done.out
    await kubectl.ok("label", "rayjob", "rayjob-sample", "-n", namespace, "seen=yes")
    deleter = kubectl.start(
        "wait", "-n", namespace, "--for=delete", "rayjob/rayjob-sample", "--timeout=20s"
    )
    await kubectl.ok("delete", "rayjob", "rayjob-sample", "-n", namespace, "--wait=false")
    assert (await deleter).code == 0
    # The initial listing plus one line per change: status write, label, deletion.
    lines = await read_lines_until(watcher, "rayjob", seconds=20)
    assert lines[0].strip() == "rayjob.ray.io/rayjob-sample"


async def test_typed_generators_send_protobuf_that_is_understood(kubectl: Kubectl) -> None:
    await kubectl.ok("create", "namespace", "generated")
    await kubectl.ok("create", "configmap", "cm", "-n", "generated", "--from-literal=k=v")
    await kubectl.ok("create", "secret", "generic", "sec", "-n", "generated", "--from-literal=pw=x")
    await kubectl.ok("create", "serviceaccount", "robot", "-n", "generated")
    names = await kubectl.ok("get", "cm,secret,sa", "-n", "generated", "-o", "name")
    assert names.split() == ["configmap/cm", "secret/sec", "serviceaccount/robot"]
    secret = json.loads(await kubectl.ok("get", "secret", "sec", "-n", "generated", "-o", "json"))
    assert secret["data"] == {"pw": "eA=="} and secret["type"] == "Opaque"
    refused = await kubectl.run("delete", "namespace", "default")
    assert refused.code == 1 and "this namespace may not be deleted" in refused.err


async def test_server_side_apply_removes_fields_the_manager_stopped_applying(
    kubectl: Kubectl, namespace: str
) -> None:
    first = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"keep": "1", "drop": "2"},
    }
    await kubectl.ok("apply", "--server-side", "-n", namespace, "-f", "-", stdin=json.dumps(first))
    await kubectl.ok("label", "configmap", "ssa", "-n", namespace, "other=manager")
    second = {**first, "data": {"keep": "3"}}
    await kubectl.ok("apply", "--server-side", "-n", namespace, "-f", "-", stdin=json.dumps(second))
    got = json.loads(
        await kubectl.ok("get", "cm", "ssa", "-n", namespace, "-o", "json", "--show-managed-fields")
    )
    assert got["data"] == {"keep": "3"}
    assert got["metadata"]["labels"] == {"other": "manager"}
    managers = {e["manager"] for e in got["metadata"]["managedFields"]}
    assert "kubectl" in managers


async def test_describe_a_pod_with_projected_and_keyed_volumes(
    kubectl: Kubectl, namespace: str
) -> None:
    # The API server defaults a projected token's expirationSeconds and the volumes' modes;
    # without them `kubectl describe pod` crashed on KubeRay's kubernetes.auth sample's pods.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "described", "namespace": namespace},
        "spec": {
            "nodeName": "nowhere",  # no kubelet runs it: only what the API server stores counts
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [
                {
                    "name": "token",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]},
                },
                {"name": "conf", "configMap": {"name": "settings"}},
                {"name": "creds", "secret": {"secretName": "creds"}},
            ],
        },
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(pod))
    stored = json.loads(await kubectl.ok("get", "pod", "described", "-n", namespace, "-o", "json"))
    token, conf, creds = stored["spec"]["volumes"]
    assert token["projected"]["defaultMode"] == 420
    assert token["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    assert conf["configMap"]["defaultMode"] == 420 and creds["secret"]["defaultMode"] == 420
    described = await kubectl.ok("describe", "pod", "described", "-n", namespace)
    assert "TokenExpirationSeconds:  3600" in described
