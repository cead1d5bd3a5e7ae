"""The RayCronJob Kubernetes activities against devcluster (real HTTP, real API semantics)."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.kube import client as kube
from activities.kube import errors
from activities.kube.client import KubeClient
from activities.raycronjob import contract
from activities.raycronjob.kube_effects import CronJobActivities
from crds.feature_gates import parse_feature_gates
from crds.refs import ObjectRef

TICK = datetime(2026, 12, 5, 1, 30, tzinfo=UTC)
TEMPLATE: dict[str, Any] = {
    "entrypoint": "python x.py",
    "shutdownAfterJobFinishes": True,
    "rayClusterSpec": {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2"}]}},
        }
    },
}


async def make_cronjob(client: KubeClient, **fields: Any) -> ObjectRef:
    name = f"c{uuid.uuid4().hex[:6]}"
    annotations = fields.pop("annotations", {})
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"schedule": "30 1 * * *", "jobTemplate": copy.deepcopy(TEMPLATE)} | fields,
    }
    created = await client.create(kube.RAYCRONJOBS, "default", body)
    return ObjectRef(
        kind="RayCronJob", namespace="default", name=name, uid=created["metadata"]["uid"]
    )


async def fire(client: KubeClient, ref: ObjectRef, at: datetime) -> contract.FiringResult:
    request = contract.CreateScheduledJobInput(ref=ref, scheduled_at=at)
    return await ActivityEnvironment().run(
        CronJobActivities(client).create_scheduled_rayjob, request
    )


async def read(client: KubeClient, ref: ObjectRef) -> contract.CronJobSnapshot:
    request = contract.ReadCronJobInput(ref=ref)
    return await ActivityEnvironment().run(CronJobActivities(client).read, request)


async def test_a_firing_creates_the_ticks_rayjob_once_and_advances_the_status(
    client: KubeClient,
) -> None:
    ref = await make_cronjob(client)
    first = await fire(client, ref, TICK)
    minute = int(TICK.timestamp()) // 60
    assert first == contract.FiringResult(rayjob=f"{ref.name}-{minute}", created=True)
    job = await client.get(kube.RAYJOBS, "default", first.rayjob)
    assert job["metadata"]["labels"]["ray.io/cronjob-name"] == ref.name
    assert job["metadata"]["ownerReferences"][0]["uid"] == ref.uid
    assert job["spec"]["entrypoint"] == "python x.py"
    cronjob = await client.get(kube.RAYCRONJOBS, "default", ref.name)
    assert cronjob["status"]["lastScheduleTime"] == "2026-12-05T01:30:00Z"

    # The same tick again (a retry, a made-up firing): the RayJob it made, nothing new.
    again = await fire(client, ref, TICK)
    assert again == contract.FiringResult(rayjob=first.rayjob, created=False)
    # An earlier tick made up late never moves the status back.
    earlier = await fire(client, ref, TICK - timedelta(days=1))
    assert earlier.created
    cronjob = await client.get(kube.RAYCRONJOBS, "default", ref.name)
    assert cronjob["status"]["lastScheduleTime"] == "2026-12-05T01:30:00Z"


async def test_a_firing_creates_nothing_for_a_suspended_or_replaced_raycronjob(
    client: KubeClient,
) -> None:
    suspended = await make_cronjob(client, suspend=True)
    result = await fire(client, suspended, TICK)
    assert result.skipped == f"{suspended} is suspended" and not result.rayjob
    assert await client.list_all(kube.RAYJOBS, "default") == []

    # Deleted and applied again under its name: the old Schedule's firing leaves it alone.
    old = await make_cronjob(client)
    await client.delete(kube.RAYCRONJOBS, "default", old.name)
    body = await client.get_or_none(kube.RAYCRONJOBS, "default", old.name)
    assert body is None
    result = await fire(client, old, TICK)
    assert result.skipped == f"{old} is gone"
    assert await client.list_all(kube.RAYJOBS, "default") == []


async def test_the_read_carries_the_times_never_the_template(client: KubeClient) -> None:
    ref = await make_cronjob(
        client,
        schedule="45 21 * * *",
        timeZone="Asia/Taipei",
        annotations={"kuberay-temporal.io/catchup-window": "10m"},
    )
    snap = await read(client, ref)
    assert snap.violations == []
    assert snap.wanted == contract.ScheduleWanted(
        cron="45 21 * * *", time_zone="Asia/Taipei", catchup_seconds=600
    )
    assert snap.created_at is not None and not snap.suspend
    assert "python x.py" not in snap.model_dump_json()


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [("61 * * * *", "'61' goes above 59"), ("@every 1s", "more often than once a minute")],
)
async def test_the_read_reports_an_invalid_schedule(
    client: KubeClient, schedule: str, problem: str
) -> None:
    ref = await make_cronjob(client, schedule=schedule)
    snap = await read(client, ref)
    assert snap.wanted is None  # nothing to schedule: the workflow pauses it and warns
    assert len(snap.violations) == 1
    assert snap.violations[0].startswith("spec.schedule: ") and problem in snap.violations[0]


async def test_the_read_reports_a_template_field_whose_gate_is_off(client: KubeClient) -> None:
    template = copy.deepcopy(TEMPLATE)
    template["rayClusterSpec"]["networkPolicy"] = {}
    ref = await make_cronjob(client, jobTemplate=template)
    snap = await read(client, ref)
    gates = parse_feature_gates("RayCronJob=true,RayClusterNetworkPolicy=true")
    request = contract.ReadCronJobInput(ref=ref)
    gated = await ActivityEnvironment().run(CronJobActivities(client, gates).read, request)
    assert snap.wanted is None and snap.violations == [
        "spec.jobTemplate.rayClusterSpec.networkPolicy: requires the RayClusterNetworkPolicy "
        "feature gate to be enabled"
    ]
    assert gated.violations == [] and gated.wanted is not None


async def test_a_person_s_suspend_is_written_to_the_spec(client: KubeClient) -> None:
    ref = await make_cronjob(client)
    request = contract.SetCronJobSuspendInput(ref=ref, suspend=True)
    await ActivityEnvironment().run(CronJobActivities(client).set_suspend, request)
    cronjob = await client.get(kube.RAYCRONJOBS, "default", ref.name)
    assert cronjob["spec"]["suspend"] is True


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        pytest.param(
            403,
            {
                "reason": "Forbidden",
                "message": 'rayjobs.ray.io "x" is forbidden: exceeded quota: rayjobs, requested:'
                " count/rayjobs.ray.io=1, used: count/rayjobs.ray.io=2, limited: "
                "count/rayjobs.ray.io=2",
            },
            '403 Forbidden: rayjobs.ray.io "x" is forbidden: exceeded quota: rayjobs, requested:'
            " count/rayjobs.ray.io=1, used: count/rayjobs.ray.io=2, limited: "
            "count/rayjobs.ray.io=2",
            id="quota",
        ),
        pytest.param(
            422,
            {
                "reason": "Invalid",
                "message": 'RayJob.ray.io "x" is invalid: spec.rayClusterSpec.headGroupSpec'
                '.template.spec.containers[0].env[0].value: Invalid value: "hunter2-token"',
            },
            '422 Invalid: RayJob.ray.io "x" is invalid: spec.rayClusterSpec.headGroupSpec'
            '.template.spec.containers[0].env[0].value: Invalid value: "<redacted>"',
            id="invalid-quoting-a-secret",
        ),
    ],
)
async def test_a_refused_rayjob_is_answered_not_raised(
    client: KubeClient,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    body: dict[str, str],
    expected: str,
) -> None:
    env = [{"name": "HF_TOKEN", "value": "hunter2-token"}]
    template = copy.deepcopy(TEMPLATE)
    template["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = env
    ref = await make_cronjob(client, jobTemplate=template)

    async def refuse(resource: kube.Resource, namespace: str | None, obj: kube.JSON) -> kube.JSON:
        raise errors.from_status(status, json.dumps(body))

    monkeypatch.setattr(client, "create", refuse)
    result = await fire(client, ref, TICK)
    minute = int(TICK.timestamp()) // 60
    assert result == contract.FiringResult(rayjob=f"{ref.name}-{minute}", refused=expected)
    # Nothing was created, so the tick is not the last scheduled one.
    cronjob = await client.get(kube.RAYCRONJOBS, "default", ref.name)
    assert "lastScheduleTime" not in (cronjob.get("status") or {})
