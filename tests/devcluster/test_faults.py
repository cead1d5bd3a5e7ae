"""Fault injection: configured shares of requests fail, and watch streams are cut."""

from __future__ import annotations

import json
import time
from pathlib import Path

import aiohttp
import pytest

from devcluster.faults import Faults
from devcluster.server import DevCluster

CM_PATH = "/api/v1/namespaces/default/configmaps"


def _body(name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


async def test_faults_are_off_by_default(tmp_path: Path) -> None:
    async with DevCluster(tmp_path) as cluster, aiohttp.ClientSession() as session:
        codes = []
        for index in range(20):
            async with session.post(cluster.url + CM_PATH, data=_body(f"c{index}")) as response:
                codes.append(response.status)
    assert set(codes) == {201}


@pytest.mark.parametrize(
    ("code", "reason"), [(429, "TooManyRequests"), (500, "InternalError"), (409, "Conflict")]
)
async def test_error_rules_hit_only_their_verbs_and_resources(
    tmp_path: Path, code: int, reason: str
) -> None:
    faults = Faults.from_data(
        {
            "rules": [
                {"verbs": ["create"], "resources": ["configmaps"], "action": "error", "code": code}
            ]
        }
    )
    async with DevCluster(tmp_path, faults=faults) as cluster, aiohttp.ClientSession() as session:
        async with session.post(cluster.url + CM_PATH, data=_body("x")) as response:
            status = await response.json()
            assert response.status == code and status["reason"] == reason
            if code == 429:
                assert response.headers["Retry-After"] == "1"
        async with session.get(cluster.url + CM_PATH) as response:
            assert response.status == 200


async def test_share_is_a_fraction_of_requests(tmp_path: Path) -> None:
    faults = Faults.from_data(
        {"seed": 3, "rules": [{"verbs": ["list"], "share": 0.3, "code": 500}]}
    )
    async with DevCluster(tmp_path, faults=faults) as cluster, aiohttp.ClientSession() as session:
        failures = 0
        for _ in range(200):
            async with session.get(cluster.url + CM_PATH) as response:
                failures += response.status == 500
    assert 30 <= failures <= 90


async def test_watch_streams_are_cut_and_requests_delayed(tmp_path: Path) -> None:
    faults = Faults.from_data(
        {
            "rules": [
                {"verbs": ["watch"], "action": "cut", "seconds": 0.2},
                {"verbs": ["get"], "action": "delay", "seconds": 0.3},
            ]
        }
    )
    async with DevCluster(tmp_path, faults=faults) as cluster, aiohttp.ClientSession() as session:
        # The watch asks for an hour; only the cut ends it within the test's timeout.
        async with session.get(
            cluster.url + CM_PATH + "?watch=true&timeoutSeconds=3600"
        ) as response:
            assert response.status == 200
            await response.read()
        started = time.monotonic()
        async with session.get(cluster.url + "/api/v1/namespaces/default") as response:
            assert response.status == 200
        assert time.monotonic() - started >= 0.3


def test_fault_config_file_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text("rules:\n  - {action: error, code: 418}\n")
    with pytest.raises(ValueError, match="fault code"):
        Faults.from_file(path)


def test_standard_mix_is_built_from_a_rate() -> None:
    faults = Faults.at_rate(0.2, seed=1)
    labels = {rule.label for rule in faults.rules}
    assert labels == {"500", "429", "409", "latency", "watch cut"}
    assert faults.dashboard is not None and faults.dashboard.rate == 0.2
    assert Faults.from_env({"DEVCLUSTER_FAULT_RATE": "0"}) is None
    from_env = Faults.from_env({"DEVCLUSTER_FAULT_RATE": "0.1", "DEVCLUSTER_FAULT_SEED": "4"})
    assert from_env is not None and from_env.seed == 4
    with pytest.raises(ValueError, match="within"):
        Faults.at_rate(1.5)


async def test_injected_faults_are_counted_and_served(tmp_path: Path) -> None:
    faults = Faults.at_rate(0.3, seed=5)
    async with DevCluster(tmp_path, faults=faults) as cluster, aiohttp.ClientSession() as session:
        codes: list[int] = []
        for index in range(60):
            async with session.post(cluster.url + CM_PATH, data=_body(f"c{index}")) as response:
                codes.append(response.status)
        async with session.get(cluster.url + "/debug/faults") as response:
            served = await response.json()
    apiserver = served["apiserver"]
    assert apiserver["requests"] == 60
    # Creates get no 409 (only updates and patches do); every error answered was counted.
    assert apiserver.get("409", 0) == 0
    assert apiserver.get("500", 0) == codes.count(500)
    assert apiserver.get("429", 0) == codes.count(429)
    assert 0 < codes.count(500) + codes.count(429) + apiserver.get("latency", 0) < 60
    assert served["dashboard"] == {"requests": 0, "500": 0, "timeout": 0, "refused": 0}


async def test_writes_meet_conflicts_in_the_standard_mix(tmp_path: Path) -> None:
    faults = Faults.at_rate(0.6, seed=8)
    patch = json.dumps({"data": {"k": "v"}})
    headers = {"Content-Type": "application/merge-patch+json"}
    async with (
        DevCluster(tmp_path) as cluster,
        aiohttp.ClientSession() as session,
        session.post(cluster.url + CM_PATH, data=_body("p")) as response,
    ):
        assert response.status == 201
    async with DevCluster(tmp_path, faults=faults) as cluster, aiohttp.ClientSession() as session:
        codes = []
        for _ in range(60):
            url = f"{cluster.url}{CM_PATH}/p"
            async with session.patch(url, data=patch, headers=headers) as response:
                codes.append(response.status)
    assert codes.count(409) == faults.counts["409"] > 0
