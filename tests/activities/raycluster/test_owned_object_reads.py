"""How many API calls a pass spends on the objects a RayCluster owns, on devcluster.

A NetworkPolicy per worker group must not mean a GET per group on every pass: the read lists
them once by label, the apply step creates only those the list lacks, at most a few reads are
in flight at once, and a spec too large to be valid costs no owned-object reads at all.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from activities.builders import DEFAULT_OPTIONS
from activities.kube.client import KubeClient
from activities.raycluster import contract, observation
from activities.raycluster.kube_effects import ClusterActivities
from crds.refs import ObjectRef
from crds.validation.sizes import MAX_WORKER_GROUPS
from tests.activities.counting import Calls
from tests.activities.raycluster.test_kube_effects import SPEC, make_cluster, run

GROUPS = 12


def _groups(count: int) -> list[dict[str, Any]]:
    group = SPEC["workerGroupSpecs"][0]
    return [copy.deepcopy(group) | {"groupName": f"g{i}", "replicas": 0} for i in range(count)]


async def _policed(client: KubeClient, groups: int) -> ObjectRef:
    return await make_cluster(client, networkPolicy={}, workerGroupSpecs=_groups(groups))


async def test_a_pass_lists_the_policies_of_every_group_once(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await _policed(client, GROUPS)
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    gets = Calls(client, "get_or_none", monkeypatch)
    lists = Calls(client, "list_all", monkeypatch)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert snap.missing_objects == []
    assert lists.count("networkpolicies") == 1
    assert gets.count("networkpolicies") == 0


async def test_the_apply_step_creates_only_the_policies_the_list_lacks(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await _policed(client, GROUPS)
    ensure = contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True)
    creates = Calls(client, "create_or_get", monkeypatch)
    await run(acts.apply, ensure)
    assert creates.count("networkpolicies") == GROUPS + 1  # the head's and each group's
    await run(acts.apply, ensure)  # a retried apply, or one for another missing object
    assert creates.count("networkpolicies") == GROUPS + 1


async def test_reads_by_name_go_a_few_at_a_time(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first pass finds no policy in the list and reads each by name (another's would
    carry no label of ours): never more than `READ_CONCURRENCY` of them at once."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await _policed(client, 3 * observation.READ_CONCURRENCY)
    in_flight, most = 0, 0
    real = client.get_or_none

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            return await real(*args, **kwargs)
        finally:
            in_flight -= 1

    monkeypatch.setattr(client, "get_or_none", counted)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert len(snap.missing_objects) > 3 * observation.READ_CONCURRENCY
    assert most == observation.READ_CONCURRENCY


async def test_a_spec_with_too_many_groups_costs_no_owned_object_reads(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation refuses it before anything is made, so the read looks for nothing."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await _policed(client, MAX_WORKER_GROUPS + 1)
    gets = Calls(client, "get_or_none", monkeypatch)
    lists = Calls(client, "list_all", monkeypatch)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.spec is not None and snap.missing_objects == []
    assert lists.count("networkpolicies") == gets.count("networkpolicies") == 0
    assert snap.worker_prefixes == {}
