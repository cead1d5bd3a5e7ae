"""The node's pure parts and its write queue, without an API server.

The write queue talks to a recording fake of `Requests` that can answer with failures, so the
order of a pod's writes, their coalescing and their retries are checked in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from devcluster.kubelet import envs, volumes
from devcluster.kubelet.events import PodEvent, killing_events, status_events
from devcluster.node.client import ApiError, Requests
from devcluster.node.mirror import Mirror
from devcluster.node.pod_setup import references, token_sources
from devcluster.node.registration import NodeSpec, node_status
from devcluster.node.writes import ApiPodWrites, status_patch
from devcluster.store import Event
from tests.eventually import eventually

JsonObject = dict[str, Any]


def a_pod(uid: str = "u1", **spec: Any) -> JsonObject:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": uid, "resourceVersion": "1"},
        "spec": spec,
    }


class RecordingApi:
    """A `Requests` that records each call and answers from a script of failures."""

    def __init__(self, failures: list[ApiError] | None = None) -> None:
        self.calls: list[tuple[str, str, JsonObject | None]] = []
        self.failures = list(failures or [])
        self.gate = asyncio.Event()
        self.gate.set()

    async def request(
        self,
        method: str,
        path: str,
        body: JsonObject | None = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JsonObject:
        await self.gate.wait()
        self.calls.append((method, path, body))
        if self.failures:
            raise self.failures.pop(0)
        return {}


_: type[Requests] = RecordingApi  # the fake keeps the protocol's shape


async def test_a_pods_status_goes_before_its_removal_and_only_the_newest() -> None:
    api = RecordingApi()
    api.gate.clear()  # hold the first request until all is queued
    writes = ApiPodWrites(api, "devcluster", Mirror())
    pod = a_pod()
    writes.write_status(pod, {"phase": "Pending"})
    await asyncio.sleep(0)  # the sender takes the first status and waits at the gate
    writes.write_status(pod, {"phase": "Running"})
    writes.write_status(pod, {"phase": "Succeeded"})
    writes.remove(pod)
    api.gate.set()
    await eventually(lambda: len(api.calls) == 3, message="three requests")
    assert [(m, p) for m, p, _ in api.calls] == [
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status"),
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status"),
        ("DELETE", "/api/v1/namespaces/ns/pods/p"),
    ]
    phases = [body["status"]["phase"] for _, _, body in api.calls[:2] if body]
    assert phases == ["Pending", "Succeeded"]  # Running was overtaken before it was sent
    assert api.calls[0][2] is not None and api.calls[0][2]["metadata"] == {"uid": "u1"}
    assert api.calls[2][2] is not None
    assert api.calls[2][2]["preconditions"] == {"uid": "u1"}
    assert api.calls[2][2]["gracePeriodSeconds"] == 0
    await writes.close()


async def test_an_unavailable_server_is_asked_again_and_a_replaced_pod_never() -> None:
    api = RecordingApi([ApiError(503, "ServiceUnavailable", "busy"), ApiError(409, "", "uid")])
    writes = ApiPodWrites(api, "devcluster", Mirror())
    pod = a_pod()
    writes.write_status(pod, {"phase": "Running"})
    writes.remove(pod)
    # 409 on the retried status: another pod has the name now; its removal is not sent.
    await eventually(lambda: not writes.pending("u1"), message="the writes given up")
    assert [m for m, _, _ in api.calls] == ["PATCH", "PATCH"]
    await writes.close()


async def test_a_refused_removal_is_asked_again_as_after_an_api_server_restart() -> None:
    # A restarted kube-apiserver answers 403 until its RBAC and Node authorizers have synced;
    # dropping the removal then left the pod Terminating for ever.
    api = RecordingApi([ApiError(403, "Forbidden", "not yet"), ApiError(401, "", "not yet")])
    writes = ApiPodWrites(api, "devcluster", Mirror())
    writes.remove(a_pod())
    await eventually(lambda: not writes.pending("u1"), message="the removal sent")
    assert [m for m, _, _ in api.calls] == ["DELETE", "DELETE", "DELETE"]
    await writes.close()


async def test_a_removal_is_sent_again_while_the_watch_still_shows_the_pod() -> None:
    # A kube-apiserver that has just started answers 404 for a pod that exists (NodeRestriction
    # reads pods from a cache not yet filled), and one killed between the two steps of a
    # delete leaves the pod with grace 0 and nothing to finish it: taking either answer as
    # the end left the pod Terminating for ever.
    api = RecordingApi([ApiError(404, "NotFound", 'pod "p" not found')])
    pods, pod = Mirror(), a_pod()
    pods.put("/pods", pod)
    writes = ApiPodWrites(api, "devcluster", pods, removal_resync=0.01)
    writes.remove(pod)
    await eventually(lambda: len(api.calls) >= 3, message="the removal sent again")
    assert {m for m, _, _ in api.calls} == {"DELETE"}
    pods.drop("/pods", pod)  # the watch shows it gone: the sender ends on its own
    await eventually(lambda: not writes.tracked("u1"), message="the sender done")
    await writes.close()


async def test_a_status_answered_404_does_not_lose_the_removal_queued_after_it() -> None:
    api = RecordingApi([ApiError(404, "NotFound", 'pod "p" not found')])
    writes = ApiPodWrites(api, "devcluster", Mirror())
    pod = a_pod()
    writes.write_status(pod, {"phase": "Running"})
    await eventually(lambda: len(api.calls) == 1, message="the status sent")
    writes.remove(pod)
    await eventually(lambda: len(api.calls) == 2, message="the removal sent")
    assert [m for m, _, _ in api.calls] == ["PATCH", "DELETE"]
    await writes.close()


async def test_the_kubelet_sees_its_own_latest_status_before_the_watch_does() -> None:
    writes = ApiPodWrites(RecordingApi(), "devcluster", Mirror())
    pod = a_pod()
    assert writes.latest(pod) is pod
    writes.write_status(pod, {"phase": "Running", "podIP": "10.244.0.9"})
    assert writes.latest(pod)["status"]["podIP"] == "10.244.0.9"
    await writes.close()


def test_a_status_patch_replaces_ip_lists_and_merges_conditions() -> None:
    status = {"podIPs": [{"ip": "10.244.0.9"}], "conditions": [{"type": "Ready"}]}
    patch = status_patch(status)
    assert patch["podIPs"] == [{"ip": "10.244.0.9"}, {"$patch": "replace"}]
    # A reason or message left out is cleared, not kept from the condition's last state.
    assert patch["conditions"] == [{"type": "Ready", "reason": None, "message": None}]
    assert status["podIPs"] == [{"ip": "10.244.0.9"}]  # the kubelet's copy is untouched


def test_node_conditions_keep_their_transition_time_and_beat() -> None:
    spec = NodeSpec("n", "10.244.0.1", 10250, "simulated")
    first = node_status(spec, None, "2026-01-01T00:00:00Z")
    later = node_status(spec, first, "2026-01-01T00:05:00Z")
    ready = next(c for c in later["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert ready["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert ready["lastHeartbeatTime"] == "2026-01-01T00:05:00Z"
    assert later["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert later["allocatable"]["pods"] == later["capacity"]["pods"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, [], id="nothing"),
        pytest.param(
            {
                "volumes": [
                    {"name": "a", "configMap": {"name": "cm"}},
                    {"name": "b", "secret": {"secretName": "s"}},
                    {
                        "name": "c",
                        "projected": {
                            "sources": [
                                {"configMap": {"name": "kube-root-ca.crt"}},
                                {"secret": {"name": "s"}},
                                {"serviceAccountToken": {"path": "token"}},
                            ]
                        },
                    },
                ]
            },
            [("configMap", "cm"), ("secret", "s"), ("configMap", "kube-root-ca.crt")],
            id="volumes, each once",
        ),
        pytest.param(
            {
                "initContainers": [{"envFrom": [{"secretRef": {"name": "init"}}]}],
                "containers": [
                    {
                        "envFrom": [{"configMapRef": {"name": "from"}}],
                        "env": [
                            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "k", "key": "x"}}},
                            {"name": "B", "value": "plain"},
                        ],
                    }
                ],
            },
            [("secret", "init"), ("configMap", "from"), ("secret", "k")],
            id="env",
        ),
    ],
)
def test_a_pod_references_the_objects_it_uses(
    spec: JsonObject, expected: list[tuple[str, str]]
) -> None:
    assert references(a_pod(**spec)) == expected


def test_a_projected_service_account_volume_holds_token_ca_and_namespace() -> None:
    source = {"audience": "", "expirationSeconds": 3607, "path": "token"}
    volume = {
        "name": "kube-api-access-x",
        "projected": {
            "sources": [
                {"serviceAccountToken": source},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ]
        },
    }
    pod = a_pod(volumes=[volume])
    assert token_sources(pod) == [source]
    files = volumes.projected_files(
        volume,
        pod,
        lambda kind, name: (
            {"ca.crt": b"CA"} if (kind, name) == ("configMap", "kube-root-ca.crt") else None
        ),
        lambda wanted: b"jwt" if wanted == source else None,
    )
    assert files == {"token": b"jwt", "ca.crt": b"CA", "namespace": b"ns"}
    with pytest.raises(volumes.VolumeError):
        volumes.projected_files(volume, pod, lambda kind, name: None, lambda wanted: b"jwt")


def test_service_links_name_every_port_of_every_service_with_an_ip() -> None:
    services = [
        {
            "metadata": {"name": "my-web"},
            "spec": {
                "clusterIP": "10.96.0.7",
                "ports": [
                    {"name": "http", "port": 80, "protocol": "TCP"},
                    {"name": "dash-board", "port": 8265},
                ],
            },
        },
        {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
    ]
    assert envs.service_links(services) == {
        "MY_WEB_SERVICE_HOST": "10.96.0.7",
        "MY_WEB_SERVICE_PORT": "80",
        "MY_WEB_SERVICE_PORT_HTTP": "80",
        "MY_WEB_SERVICE_PORT_DASH_BOARD": "8265",
        "MY_WEB_PORT": "tcp://10.96.0.7:80",
        "MY_WEB_PORT_80_TCP": "tcp://10.96.0.7:80",
        "MY_WEB_PORT_80_TCP_PROTO": "tcp",
        "MY_WEB_PORT_80_TCP_PORT": "80",
        "MY_WEB_PORT_80_TCP_ADDR": "10.96.0.7",
        "MY_WEB_PORT_8265_TCP": "tcp://10.96.0.7:8265",
        "MY_WEB_PORT_8265_TCP_PROTO": "tcp",
        "MY_WEB_PORT_8265_TCP_PORT": "8265",
        "MY_WEB_PORT_8265_TCP_ADDR": "10.96.0.7",
    }


def test_a_relist_announces_what_changed_while_the_watch_was_away() -> None:
    mirror = Mirror()
    seen: list[tuple[str, str]] = []
    mirror.add_listener(lambda e: seen.append((e.type, e.obj["metadata"]["name"])))

    def obj(name: str, rv: str) -> JsonObject:
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}

    mirror.replace("/pods", [obj("kept", "1"), obj("changed", "2"), obj("gone", "3")])
    seen.clear()
    mirror.replace("/pods", [obj("kept", "1"), obj("changed", "5"), obj("new", "6")])
    assert sorted(seen) == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "changed")]
    seen.clear()
    mirror.put("/pods", obj("changed", "4"))  # an older copy than the mirror's
    assert seen == []
    assert mirror.get("/pods", "ns", "changed") == obj("changed", "5")
    assert mirror.synced("/pods").is_set()


def test_the_mirror_events_are_the_stores() -> None:
    mirror = Mirror()
    events: list[Event] = []
    mirror.add_listener(events.append)
    mirror.put("/services", {"metadata": {"name": "s", "namespace": "n", "resourceVersion": "9"}})
    assert (events[0].type, events[0].rv, events[0].resource) == ("ADDED", 9, "/services")


def _container(state: JsonObject, container_id: str = "") -> JsonObject:
    return {"name": "main", "state": state, "containerID": container_id}


def test_status_changes_record_what_a_kubelet_would() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}}
    creating = {"containerStatuses": [_container({"waiting": {"reason": "ContainerCreating"}})]}
    running = {"containerStatuses": [_container({"running": {}}, "devcluster://a")]}
    backoff = {"containerStatuses": [_container({"waiting": {"reason": "CrashLoopBackOff"}}, "x")]}
    field = "spec.containers{main}"
    assert status_events(pod, creating, running) == [
        PodEvent("Normal", "Created", "Created container: main", field),
        PodEvent("Normal", "Started", "Started container main", field),
    ]
    assert status_events(pod, running, running) == []
    assert status_events(pod, running, backoff) == [
        PodEvent("Warning", "BackOff", "Back-off restarting failed container main in pod p", field)
    ]
    assert status_events(pod, backoff, backoff) == []
    assert killing_events({**pod, "status": running}) == [
        PodEvent("Normal", "Killing", "Stopping container main", field)
    ]


def test_a_simulated_node_has_room_for_every_pod_its_network_can_address() -> None:
    # 1,000 RayClusters of 4 pods each once stopped at the process node's 1,000 pods, with
    # the scheduler reporting "Too many pods" for the rest.
    simulated = node_status(NodeSpec("n", "10.244.0.1", 10250, "simulated"), None, "t")
    process = node_status(NodeSpec("n", "10.244.0.1", 10250, "process"), None, "t")
    assert simulated["allocatable"]["pods"] == "60k"  # below the /16's 65,534 addresses
    assert simulated["allocatable"]["cpu"] == "100k"
    assert process["allocatable"]["pods"] == "1000"
