"""The workload controllers' pure decisions, table by table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devcluster.controllers import deployments, jobs, replica_sets, stateful_sets

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
JsonObject = dict[str, Any]


def pod(name: str, phase: str = "Running", ready: bool = True, **extra: Any) -> JsonObject:
    status: JsonObject = {"phase": phase}
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    status.update(extra.pop("status", {}))
    meta = {"name": name, "creationTimestamp": extra.pop("created", "2025-01-01T00:00:00Z")}
    meta.update(extra)
    return {"metadata": meta, "status": status}


def job(status: JsonObject | None = None, **spec: Any) -> JsonObject:
    spec.setdefault("template", {"spec": {"restartPolicy": "Never"}})
    return {"metadata": {"name": "j", "uid": "u1"}, "spec": spec, "status": status or {}}


def failed_at(name: str, finished: datetime) -> JsonObject:
    terminated = {"state": {"terminated": {"finishedAt": jobs.rfc3339(finished)}}}
    return pod(name, "Failed", False, status={"containerStatuses": [terminated]})


def _types(plan: jobs.JobPlan) -> list[str]:
    return [c["type"] for c in plan.status.get("conditions") or []]


@pytest.mark.parametrize(
    ("job_obj", "pods", "create", "delete", "conditions", "reason"),
    [
        pytest.param(job(), [], 1, [], [], None, id="new-job-starts-one-pod"),
        pytest.param(job(), [pod("a")], 0, [], [], None, id="running-pod-waits"),
        pytest.param(
            job(),
            [pod("a", "Succeeded", False)],
            0,
            [],
            ["SuccessCriteriaMet", "Complete"],
            "CompletionsReached",
            id="success-completes",
        ),
        pytest.param(
            job(backoffLimit=1),
            [pod("a", "Failed", False)],
            1,
            [],
            [],
            None,
            id="failure-under-limit-replaces",
        ),
        pytest.param(
            job(backoffLimit=1),
            [pod("a", "Failed", False), pod("b", "Failed", False)],
            0,
            [],
            ["FailureTarget", "Failed"],
            "BackoffLimitExceeded",
            id="backoff-limit-fails",
        ),
        pytest.param(
            job(backoffLimit=0),
            [pod("a", "Failed", False)],
            0,
            [],
            ["FailureTarget", "Failed"],
            "BackoffLimitExceeded",
            id="backoff-limit-zero",
        ),
        pytest.param(
            job({"startTime": "2025-01-01T11:59:00Z"}, activeDeadlineSeconds=30),
            [pod("a")],
            0,
            ["a"],
            ["FailureTarget", "Failed"],
            "DeadlineExceeded",
            id="deadline-kills-running-pod",
        ),
        pytest.param(
            job(completions=3, parallelism=2),
            [pod("a", "Succeeded", False)],
            2,
            [],
            [],
            None,
            id="parallel-fills-remaining-completions",
        ),
        pytest.param(
            job(parallelism=2),
            [pod("a", "Succeeded", False), pod("b")],
            0,
            [],
            [],
            None,
            id="work-queue-waits-for-the-rest",
        ),
        pytest.param(
            job({"conditions": [{"type": "Failed", "status": "True"}]}),
            [pod("a")],
            0,
            ["a"],
            ["Failed"],
            None,
            id="finished-failed-job-only-cleans-up",
        ),
    ],
)
def test_job_decisions(
    job_obj: JsonObject,
    pods: list[JsonObject],
    create: int,
    delete: list[str],
    conditions: list[str],
    reason: str | None,
) -> None:
    plan = jobs.decide(job_obj, pods, NOW, backoff=0)
    assert (plan.create, plan.delete, _types(plan)) == (create, delete, conditions)
    if reason:
        assert plan.status["conditions"][-1]["reason"] == reason


def test_job_status_counts_and_times() -> None:
    plan = jobs.decide(job(), [pod("a", "Succeeded", False)], NOW, backoff=0)
    assert plan.status["succeeded"] == 1 and "failed" not in plan.status
    assert plan.status["startTime"] == plan.status["completionTime"] == "2025-01-01T12:00:00Z"
    running = jobs.decide(job(), [pod("a", ready=True)], NOW, backoff=0)
    assert (running.status["active"], running.status["ready"]) == (1, 1)


def test_on_failure_restarts_count_toward_the_backoff_limit() -> None:
    spec = {"template": {"spec": {"restartPolicy": "OnFailure"}}, "backoffLimit": 2}
    restarted = pod("a", status={"containerStatuses": [{"restartCount": 3}]})
    plan = jobs.decide(job(**spec), [restarted], NOW, backoff=0)
    assert _types(plan) == ["FailureTarget", "Failed"] and plan.delete == ["a"]


@pytest.mark.parametrize(
    ("failures", "finished_ago", "create", "requeue"),
    [
        pytest.param(1, 3, 0, 7.0, id="first-failure-waits-10s"),
        pytest.param(1, 11, 1, None, id="after-backoff-replaces"),
        pytest.param(2, 5, 0, 15.0, id="second-failure-waits-20s"),
    ],
)
def test_job_backoff_delays_replacements(
    failures: int, finished_ago: int, create: int, requeue: float | None
) -> None:
    failed = [failed_at(f"f{i}", NOW - timedelta(seconds=finished_ago)) for i in range(failures)]
    plan = jobs.decide(job(backoffLimit=6), failed, NOW, backoff=10)
    assert (plan.create, plan.requeue) == (create, requeue)


def rs(replicas: int) -> JsonObject:
    return {"metadata": {"name": "r", "uid": "u", "generation": 2}, "spec": {"replicas": replicas}}


@pytest.mark.parametrize(
    ("replicas", "pods", "create", "delete"),
    [
        pytest.param(2, [pod("a")], 1, [], id="scale-up"),
        pytest.param(1, [pod("a"), pod("b")], 0, ["b"], id="scale-down-newest-by-name"),
        pytest.param(
            1,
            [pod("new", created="2025-01-01T00:00:09Z"), pod("old", ready=False)],
            0,
            ["old"],
            id="not-ready-goes-before-newer-ready",
        ),
        pytest.param(1, [pod("a", "Failed", False)], 1, [], id="failed-pod-is-not-counted"),
        pytest.param(0, [], 0, [], id="nothing-to-do"),
    ],
)
def test_replica_set_decisions(
    replicas: int, pods: list[JsonObject], create: int, delete: list[str]
) -> None:
    plan = replica_sets.decide(rs(replicas), pods)
    assert (plan.create, plan.delete) == (create, delete)
    assert plan.status["observedGeneration"] == 2


def deployment(replicas: int = 2, strategy: str = "RollingUpdate", image: str = "v1") -> JsonObject:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "uid": "du", "generation": 1},
        "spec": {
            "replicas": replicas,
            "strategy": {"type": strategy},
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"image": image}},
        },
    }


def replica_set_of(dep: JsonObject, replicas: int, ready: int, revision: int = 1) -> JsonObject:
    template_hash = deployments.pods.template_hash(dep["spec"]["template"])
    body = deployments.new_replica_set(dep, template_hash, revision)
    body["spec"]["replicas"] = replicas
    body["status"] = {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready}
    return body


def test_deployment_creates_a_hashed_replica_set_first() -> None:
    plan = deployments.decide(deployment(), [], NOW)
    assert plan.create is not None
    labels = plan.create["spec"]["template"]["metadata"]["labels"]
    assert plan.create["metadata"]["name"] == f"d-{labels[deployments.HASH_LABEL]}"
    assert plan.create["spec"]["selector"]["matchLabels"] == labels
    assert plan.create["metadata"]["annotations"][deployments.REVISION] == "1"


@pytest.mark.parametrize(
    ("strategy", "new_ready", "old_replicas", "scale_new", "scale_old"),
    [
        pytest.param("RollingUpdate", 0, 2, 2, None, id="rolling-surges-new-first"),
        pytest.param("RollingUpdate", 2, 2, None, 0, id="rolling-drops-old-when-new-available"),
        pytest.param("Recreate", 0, 2, None, 0, id="recreate-drops-old-first"),
        pytest.param("Recreate", 0, 0, 2, None, id="recreate-starts-new-when-old-gone"),
    ],
)
def test_deployment_rollout(
    strategy: str,
    new_ready: int,
    old_replicas: int,
    scale_new: int | None,
    scale_old: int | None,
) -> None:
    old = replica_set_of(deployment(strategy=strategy, image="v1"), old_replicas, old_replicas)
    dep = deployment(strategy=strategy, image="v2")
    new = replica_set_of(dep, 2 if new_ready else 0, new_ready, revision=2)
    plan = deployments.decide(dep, [old, new], NOW)
    assert plan.create is None
    assert plan.scale.get(new["metadata"]["name"]) == scale_new
    assert plan.scale.get(old["metadata"]["name"]) == scale_old


def test_deployment_status_when_rolled_out() -> None:
    dep = deployment()
    plan = deployments.decide(dep, [replica_set_of(dep, 2, 2)], NOW)
    status = plan.status
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (2, 2, 2)
    reasons = {c["type"]: c["reason"] for c in status["conditions"]}
    assert reasons == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }
    again = deployments.decide(
        {**dep, "status": status}, [replica_set_of(dep, 2, 2)], NOW + timedelta(1)
    )
    assert again.status == status  # no new timestamps: no status write loop


def sts(replicas: int = 3, policy: str = "OrderedReady", image: str = "v1") -> JsonObject:
    return {
        "metadata": {"name": "s", "uid": "su", "generation": 1},
        "spec": {
            "replicas": replicas,
            "serviceName": "svc",
            "podManagementPolicy": policy,
            "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"image": image}},
        },
    }


def member(owner: JsonObject, index: int, ready: bool = True, **extra: Any) -> JsonObject:
    body = stateful_sets.pod_body(owner, index)
    body["status"] = pod("x", ready=ready, **extra)["status"]
    return body


@pytest.mark.parametrize(
    ("owner", "existing", "create", "delete"),
    [
        pytest.param(sts(), [], [0], [], id="ordered-starts-with-zero"),
        pytest.param(sts(), [(0, False)], [], [], id="ordered-waits-for-ready"),
        pytest.param(sts(), [(0, True)], [1], [], id="ordered-next-when-ready"),
        pytest.param(sts(policy="Parallel"), [], [0, 1, 2], [], id="parallel-all-at-once"),
        pytest.param(
            sts(replicas=1),
            [(0, True), (1, True), (2, True)],
            [],
            ["s-2"],
            id="scale-down-highest-first",
        ),
    ],
)
def test_stateful_set_ordering(
    owner: JsonObject, existing: list[tuple[int, bool]], create: list[int], delete: list[str]
) -> None:
    plan = stateful_sets.decide(owner, [member(owner, i, ready) for i, ready in existing])
    assert (plan.create, plan.delete) == (create, delete)


def test_stateful_set_pods_have_stable_identity() -> None:
    body = stateful_sets.pod_body(sts(), 1)
    assert body["metadata"]["name"] == "s-1"
    assert (body["spec"]["hostname"], body["spec"]["subdomain"]) == ("s-1", "svc")
    assert body["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"


def test_stateful_set_rolls_out_from_the_highest_ordinal() -> None:
    old = sts(replicas=2, image="v1")
    new = sts(replicas=2, image="v2")
    plan = stateful_sets.decide(new, [member(old, 0), member(old, 1)])
    assert plan.delete == ["s-1"]
    plan = stateful_sets.decide(new, [member(old, 0), member(new, 1)])
    assert plan.delete == ["s-0"]
    done = stateful_sets.decide(new, [member(new, 0), member(new, 1)])
    assert done.delete == [] and done.status["currentRevision"] == done.status["updateRevision"]


def test_stateful_set_replaces_a_failed_pod() -> None:
    owner = sts(replicas=1)
    plan = stateful_sets.decide(owner, [member(owner, 0, ready=False, status={"phase": "Failed"})])
    assert plan.delete == ["s-0"]
