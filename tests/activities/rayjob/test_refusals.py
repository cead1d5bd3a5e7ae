"""An activity that meets a RayJob field validation refuses fails for good, unexpanded.

The workflow validates each spec it reads; the activities re-read the RayJob, so an edit in
between reaches them unvalidated. What they build from such a field (a container argument,
the submission's body) must never be expanded from an alias bomb, and the failure must be
non-retryable: a retry reads the same RayJob and fails the same way.
"""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.builders import DEFAULT_OPTIONS
from activities.builders.rayjob import InvalidJobSpecError
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.rayjob import contract
from activities.rayjob.kube_effects import JobActivities
from activities.rayjob.ray_effects import job_submission
from crds.rayjob import RayJobSpec
from tests.activities.head_services import make_head_service
from tests.activities.rayjob.test_kube_effects import make_rayjob, run
from tests.activities.rayjob.test_ray_effects import Dashboard, activities, submit_input
from tests.activities.rayjob.test_ray_effects import make_rayjob as make_job_with_cluster
from tests.alias_bombs import BOMB_584, SMALL_BOMB

EXPANDS = "expands to more than 25,000 keys and values through its aliases (*name) (line 5)"
REFUSED = f"spec.runtimeEnvYAML: runtimeEnvYAML {EXPANDS}"


def assert_refused_for_good(err: pytest.ExceptionInfo[ApplicationError], message: str) -> None:
    assert err.value.non_retryable
    assert err.value.type == contract.INVALID_SPEC_ERROR
    assert err.value.message == message


@pytest.mark.parametrize("bomb", [SMALL_BOMB, BOMB_584], ids=["small-bomb", "bomb-584"])
async def test_create_submitter_refuses_an_alias_bomb(client: KubeClient, bomb: str) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    cluster = f"{ref.name}-aaaaa"
    await run(
        acts.create_cluster,
        contract.CreateClusterInput(ref=ref, cluster_name=cluster, job_id="x", attempt=1),
    )
    # Edited after the workflow validated it.
    await client.patch(kube.RAYJOBS, "default", ref.name, {"spec": {"runtimeEnvYAML": bomb}})
    await make_head_service(client, "default", cluster)
    params = contract.CreateSubmitterInput(ref=ref, cluster_name=cluster, job_id="x", attempt=1)
    with pytest.raises(ApplicationError) as err:
        await run(acts.create_submitter, params)
    assert_refused_for_good(err, REFUSED)
    assert await client.get_or_none(kube.JOBS, "default", ref.name) is None


async def test_create_cluster_refuses_an_alias_bomb_for_the_sidecar(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client, submissionMode="SidecarMode", runtimeEnvYAML=BOMB_584)
    params = contract.CreateClusterInput(
        ref=ref, cluster_name=f"{ref.name}-aaaaa", job_id="x", attempt=1
    )
    with pytest.raises(ApplicationError) as err:
        await run(acts.create_cluster, params)
    assert_refused_for_good(err, REFUSED)
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", params.cluster_name) is None


async def test_submit_refuses_an_alias_bomb_without_calling_ray(client: KubeClient) -> None:
    ref = await make_job_with_cluster(client, submissionMode="HTTPMode", runtimeEnvYAML=SMALL_BOMB)
    dashboard = Dashboard()
    params = submit_input(ref)
    with pytest.raises(ApplicationError) as err:
        await run(activities(client, dashboard).submit, params)
    assert_refused_for_good(err, REFUSED)
    assert dashboard.requests == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"runtimeEnvYAML": BOMB_584}, REFUSED, id="runtime-env-bomb"),
        pytest.param(
            {"entrypointResources": "[" * 5000},
            "spec.entrypointResources: entrypointResources nests deeper than 64 levels",
            id="resources-nested-too-deep",
        ),
        pytest.param(
            {"entrypointResources": '{"r": 1e400}'},
            "spec.entrypointResources: entrypointResources resource 'r' is too large for a number",
            id="resources-infinite",
        ),
    ],
)
def test_the_submission_body_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidJobSpecError) as err:
        job_submission(RayJobSpec.model_validate({"entrypoint": "python x.py", **fields}), "j")
    assert str(err.value) == message


def test_the_submission_body_keeps_runtime_env_values_as_json() -> None:
    spec = RayJobSpec.model_validate(
        {
            "entrypoint": "x",
            "runtimeEnvYAML": "env_vars: {DAY: 2024-01-01}",
            "entrypointResources": '{"r": 2}',
        }
    )
    submission = job_submission(spec, "j")
    assert submission.runtime_env == {"env_vars": {"DAY": "2024-01-01"}}
    assert submission.entrypoint_resources == {"r": 2.0}
