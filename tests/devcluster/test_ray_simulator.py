"""The Ray simulator's pure parts: entrypoint conventions, job and Serve status over time."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from activities.builders.rayjob import submit_script
from crds.enums import JobSubmissionMode
from crds.rayjob import RayJob
from devcluster.ray_simulator import submitter
from devcluster.ray_simulator.dashboard import SimulatedHead
from devcluster.ray_simulator.jobs import PENDING_SECONDS, Plan, SimulatedJob, plan
from devcluster.ray_simulator.serve import InvalidServeConfig, SimulatedServe


@pytest.mark.parametrize(
    ("entrypoint", "expected"),
    [
        ("python train.py", Plan(0.5, 0, ())),
        ("sleep 3", Plan(3.0, 0, ())),
        ("echo hi; sleep 1.5 && sleep 2", Plan(3.5, 0, ("hi",))),
        ("sleep 2; exit 1", Plan(2.0, 1, ())),
        ("python -c 'import sys, time; time.sleep(4); sys.exit(7)'", Plan(4.0, 7, ())),
        ("echo 'a b'; echo \"c\"; exit 0", Plan(0.5, 0, ("a b", "c"))),
        ("exit 2; exit 0", Plan(0.5, 0, ())),
    ],
)
def test_plan_reads_the_entrypoint(entrypoint: str, expected: Plan) -> None:
    assert plan(entrypoint) == expected


def job(entrypoint: str) -> SimulatedJob:
    return SimulatedJob("j1", entrypoint, submitted_at=1000.0, plan=plan(entrypoint))


def test_a_job_runs_its_time_then_succeeds() -> None:
    j = job("echo done; sleep 10")
    assert j.status(1000.0) == "PENDING"
    assert j.info(1000.0)["driver_node_id"] is None
    running = 1000.0 + PENDING_SECONDS
    assert j.status(running) == "RUNNING"
    assert j.status(running + 9.9) == "RUNNING"
    info = j.info(running + 10)
    assert (info["status"], info["driver_exit_code"], info["error_type"]) == ("SUCCEEDED", 0, None)
    assert info["start_time"] == 1_000_000 and info["end_time"] == int((running + 10) * 1000)
    assert j.logs(running + 10).splitlines()[-1] == "done"


def test_a_job_with_exit_code_fails() -> None:
    j = job("sleep 1; exit 3")
    info = j.info(1002.0)
    assert (info["status"], info["driver_exit_code"]) == ("FAILED", 3)
    assert info["error_type"] == "JOB_ENTRYPOINT_COMMAND_ERROR"
    assert "exit code 3" in info["message"]


def test_stop_ends_a_running_job_only() -> None:
    j = job("sleep 60")
    assert j.stop(1001.0) is True
    assert j.status(5000.0) == "STOPPED"
    assert j.info(5000.0)["end_time"] == 1_001_000
    assert j.stop(1002.0) is False
    done = job("sleep 1")
    assert done.stop(1010.0) is False
    assert done.status(1010.0) == "SUCCEEDED"


def test_serve_apps_turn_running_after_the_delay() -> None:
    serve = SimulatedServe(delay=2.0)
    assert serve.details(0.0)["applications"] == {}
    config = {"applications": [{"name": "a", "import_path": "m:app", "route_prefix": "/a"}]}
    serve.apply(config, now=10.0)
    app = serve.details(11.0)["applications"]["a"]
    assert (app["status"], app["deployments"]["app"]["status"]) == ("DEPLOYING", "UPDATING")
    assert serve.serving("/a/x", 11.0) is None
    app = serve.details(12.0)["applications"]["a"]
    assert (app["status"], app["deployments"]["app"]["status"]) == ("RUNNING", "HEALTHY")
    assert serve.serving("/a/x", 12.0) == "a"
    # The same config again changes nothing; a changed app deploys again.
    serve.apply(config, now=20.0)
    assert serve.details(20.0)["applications"]["a"]["status"] == "RUNNING"
    serve.apply(
        {
            **config,
            "target_capacity": 50,
            "applications": [{**config["applications"][0], "args": {"x": 1}}],
        },
        now=30.0,
    )
    details = serve.details(30.0)
    assert (details["applications"]["a"]["status"], details["target_capacity"]) == ("DEPLOYING", 50)
    serve.shutdown()
    assert serve.details(40.0) == serve.details(0.0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"applications": [{"name": "", "import_path": "m:a"}]}, "must be nonempty"),
        ({"applications": [{"name": "x", "import_path": "m:a"}] * 2}, "must be unique"),
        ({"applications": [{"name": "x"}]}, "import_path"),
        ({"applications": [{"name": "x", "import_path": "a:b:c"}]}, "more than one colon"),
        ({"applications": [{"name": "x", "import_path": "module"}]}, "names no attribute"),
        ({"applications": [{"name": "x", "import_path": "m.app."}]}, "starts or ends"),
        ({"applications": [{"name": "x", "import_path": ":app"}]}, "starts or ends"),
        ({"applications": "nope"}, "valid list"),
        ([], "valid list"),
    ],
)
def test_serve_rejects_what_ray_rejects(config: object, message: str) -> None:
    with pytest.raises(InvalidServeConfig, match=message):
        SimulatedServe().apply(config, now=0.0)


def test_serve_takes_both_forms_of_import_path_as_ray_does() -> None:
    """Regression: only `module:attribute` was taken, so KubeRay's own RayService sample
    (`fruit.deployment_graph`) was refused with 400 and never became Ready on either side."""
    serve = SimulatedServe(delay=5.0)
    dotted = {"name": "fruit_app", "import_path": "fruit.deployment_graph"}
    serve.apply({"applications": [dotted, {"name": "m", "import_path": "m:app"}]}, now=0.0)
    statuses = {n: a["status"] for n, a in serve.details(10.0)["applications"].items()}
    assert statuses == {"fruit_app": "RUNNING", "m": "RUNNING"}


def kuberay_job(entrypoint: str) -> RayJob:
    head = {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}
    return RayJob.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "j", "namespace": "ns"},
            "spec": {
                "entrypoint": entrypoint,
                "runtimeEnvYAML": "env_vars: {A: '1'}",
                "metadata": {"team": "a"},
                "entrypointResources": '{"r": 1}',
                "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}}
                },
            },
        }
    )


def test_parse_reads_the_k8s_job_submitter_script() -> None:
    job = kuberay_job("sleep 2; exit 1")
    script = submit_script(
        job, "j-1", "svc.ns.svc.cluster.local:8265", JobSubmissionMode.K8S_JOB, 0
    )
    submission = submitter.parse({"command": ["/bin/bash", "-ce", "--"], "args": [script]}, {})
    assert submission == submitter.Submission(
        address="http://svc.ns.svc.cluster.local:8265",
        entrypoint="sleep 2; exit 1",
        submission_id="j-1",
        runtime_env={"env_vars": {"A": "1"}},
        metadata={"team": "a"},
        no_wait=True,
        check_first=True,
        follow=True,
    )


def test_parse_reads_the_sidecar_script_and_user_commands() -> None:
    script = submit_script(kuberay_job("python x.py"), "j-2", "", JobSubmissionMode.SIDECAR, 8265)
    submission = submitter.parse({"args": [script]}, {})
    assert submission is not None
    assert (submission.address, submission.submission_id) == ("http://127.0.0.1:8265", "j-2")
    assert (submission.entrypoint, submission.no_wait, submission.follow) == (
        "python x.py",
        False,
        False,
    )
    # A user's own submitter (KubeRay's samples), with the variables KubeRay sets.
    own = {
        "command": [
            "sh",
            "-c",
            "ray job submit --address=http://$RAY_DASHBOARD_ADDRESS"
            " --submission-id=$RAY_JOB_SUBMISSION_ID -- echo hi",
        ]
    }
    env = {"RAY_DASHBOARD_ADDRESS": "h.ns.svc:8265", "RAY_JOB_SUBMISSION_ID": "s-3"}
    submission = submitter.parse(own, env)
    assert submission is not None
    assert (submission.address, submission.submission_id, submission.entrypoint) == (
        "http://h.ns.svc:8265",
        "s-3",
        "echo hi",
    )
    assert submitter.parse({"command": ["python", "main.py"]}, {}) is None


def test_parse_reads_kuberays_light_weight_submitter() -> None:
    """KubeRay's Go submitter (its `ray-job.light-weight-submitter` sample): flags, then the
    entrypoint after `--`; address and id from the env KubeRay sets."""
    container = {
        "command": ["/submitter"],
        "args": ["--runtime-env-json", '{"pip": ["requests"]}', "--", "python", "/s/code.py"],
    }
    assert submitter.is_submitter(container)
    env = {"RAY_DASHBOARD_ADDRESS": "h.ns.svc:8265", "RAY_JOB_SUBMISSION_ID": "s-4"}
    assert submitter.parse(container, env) == submitter.Submission(
        address="http://h.ns.svc:8265",
        entrypoint="python /s/code.py",
        submission_id="s-4",
        runtime_env={"pip": ["requests"]},
        no_wait=True,
        check_first=True,
        follow=True,
    )
    assert submitter.parse(container, {}) is None  # it exits 1 without them


async def test_a_head_with_a_state_file_comes_back_with_its_jobs_and_apps(tmp_path: Path) -> None:
    state = tmp_path / "head.json"
    first = SimulatedHead(state_file=state, serve_delay=0.0)
    base = f"http://127.0.0.1:{await first.start()}"
    config = {"applications": [{"name": "a", "import_path": "m:app"}], "target_capacity": 30}
    async with httpx.AsyncClient(base_url=base) as http:
        await http.post("/api/jobs/", json={"entrypoint": "sleep 600", "submission_id": "p1"})
        await http.post("/api/jobs/p1/stop")
        assert (await http.put("/api/serve/applications/", json=config)).status_code == 200
    await first.stop()

    second = SimulatedHead(state_file=state, serve_delay=0.0)
    base = f"http://127.0.0.1:{await second.start()}"
    try:
        async with httpx.AsyncClient(base_url=base) as http:
            job = (await http.get("/api/jobs/p1")).json()
            serve = (await http.get("/api/serve/applications/")).json()
            health = await http.get(f"http://127.0.0.1:{second.serve_port()}/-/healthz")
        assert job["status"] == "STOPPED"
        assert (serve["applications"]["a"]["status"], serve["target_capacity"]) == ("RUNNING", 30)
        assert health.text == "success"
    finally:
        await second.stop()
