"""Services networking decisions: backends, slices, Endpoints, hosts file, proxy URLs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devcluster import statuses
from devcluster.networking import endpoint_slices, hosts, proxy_subresource, service_proxy

JsonObject = dict[str, Any]


def service(publish: bool = False, cluster_ip: str = "10.96.0.10", **spec: Any) -> JsonObject:
    spec.setdefault("ports", [{"name": "gcs", "port": 6379, "targetPort": "gcs"}])
    return {
        "metadata": {"name": "head-svc", "namespace": "ns", "uid": "svc-uid"},
        "spec": {
            "selector": {"app": "head"},
            "clusterIP": cluster_ip,
            "publishNotReadyAddresses": publish,
            **spec,
        },
    }


def pod(name: str, ip: str, ready: bool = True, **meta: Any) -> JsonObject:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": {"app": "head"},
            **meta,
        },
        "spec": {
            "containers": [{"name": "ray", "ports": [{"name": "gcs", "containerPort": 6380}]}]
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def conditions(body: JsonObject) -> list[tuple[str, bool, bool, bool]]:
    return [
        (e["addresses"][0], *(e["conditions"][k] for k in ("ready", "serving", "terminating")))
        for e in body["endpoints"]
    ]


@pytest.mark.parametrize(
    ("publish", "pods", "expected"),
    [
        pytest.param(
            False, [pod("a", "10.244.0.2")], [("10.244.0.2", True, True, False)], id="ready"
        ),
        pytest.param(
            False,
            [pod("a", "10.244.0.2", False)],
            [("10.244.0.2", False, False, False)],
            id="not-ready",
        ),
        pytest.param(
            True,
            [pod("a", "10.244.0.2", False)],
            [("10.244.0.2", True, True, False)],
            id="published-not-ready",
        ),
        pytest.param(
            False,
            [pod("a", "10.244.0.2", deletionTimestamp="2025-01-01T00:00:00Z")],
            [("10.244.0.2", False, True, True)],
            id="terminating",
        ),
        pytest.param(False, [pod("a", "")], [], id="no-ip-yet"),
    ],
)
def test_slice_endpoint_conditions(
    publish: bool, pods: list[JsonObject], expected: list[tuple[str, bool, bool, bool]]
) -> None:
    [body] = endpoint_slices.slices(service(publish), pods)
    assert conditions(body) == expected
    assert body["metadata"]["labels"][endpoint_slices.SERVICE_NAME] == "head-svc"


def test_slice_resolves_named_ports_and_references_pods() -> None:
    [body] = endpoint_slices.slices(service(), [pod("a", "10.244.0.2")])
    assert body["ports"] == [{"name": "gcs", "port": 6380, "protocol": "TCP"}]
    assert body["endpoints"][0]["targetRef"] == {
        "kind": "Pod",
        "namespace": "ns",
        "name": "a",
        "uid": "uid-a",
    }
    assert body["metadata"]["ownerReferences"][0]["kind"] == "Service"


def test_no_backends_leaves_a_placeholder_slice() -> None:
    [body] = endpoint_slices.slices(service(), [])
    assert body["endpoints"] == [] and body["ports"] is None


def test_endpoints_split_ready_and_not_ready() -> None:
    body = endpoint_slices.endpoints(
        service(), [pod("a", "10.244.0.2"), pod("b", "10.244.0.3", False)]
    )
    [subset] = body["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.244.0.2"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.0.3"]
    assert subset["ports"] == [{"name": "gcs", "port": 6380, "protocol": "TCP"}]


def test_slice_changes_pair_by_port_set() -> None:
    old = endpoint_slices.slices(service(), [pod("a", "10.244.0.2", False)])[0]
    old["metadata"]["name"] = "head-svc-abcde"
    wanted = endpoint_slices.slices(service(), [pod("a", "10.244.0.2")])
    create, update, delete = endpoint_slices.slice_changes([old], wanted)
    assert (create, delete) == ([], [])
    assert update[0]["metadata"]["name"] == "head-svc-abcde"
    assert update[0]["endpoints"][0]["conditions"]["ready"] is True


def test_ready_targets_skip_not_ready() -> None:
    body = endpoint_slices.slices(
        service(), [pod("a", "10.244.0.2"), pod("b", "10.244.0.3", False)]
    )
    assert endpoint_slices.ready_targets(body, "gcs") == [("10.244.0.2", 6380)]


def test_hosts_file_names_services_headless_endpoints_and_hostnames() -> None:
    headless = service(publish=True, cluster_ip="None")
    headless["metadata"]["name"] = "head"
    slices = endpoint_slices.slices(headless, [pod("a", "10.244.0.2", False)])
    member = pod("r-0", "10.244.0.9")
    member["spec"].update(hostname="r-0", subdomain="redis")
    text = hosts.hosts_file([service(), headless], slices, [member])
    lines = text.splitlines()
    assert "127.0.0.1\tlocalhost" in lines
    assert "10.96.0.10\thead-svc.ns.svc.cluster.local head-svc.ns.svc head-svc.ns" in lines
    assert "10.244.0.2\thead.ns.svc.cluster.local head.ns.svc head.ns" in lines
    assert "10.244.0.9\tr-0.redis.ns.svc.cluster.local" in lines


class _CountedList(list[Any]):
    """A list that counts how often it is read through."""

    reads = 0

    def __iter__(self) -> Iterator[Any]:
        self.reads += 1
        return super().__iter__()


def test_hosts_file_reads_the_slices_once_whatever_the_headless_services() -> None:
    # A scan of every slice per headless Service made the node's rewrites quadratic: with a
    # thousand RayClusters its event loop spent its time here and its Lease went stale.
    headless = []
    for index in range(50):
        body = service(cluster_ip="None")
        body["metadata"]["name"] = f"head-{index}"
        headless.append(body)
    slices = _CountedList(
        s for body in headless for s in endpoint_slices.slices(body, [pod("a", "10.244.0.2")])
    )
    lines = hosts.hosts_file(headless, slices, []).splitlines()
    assert slices.reads == 1
    assert "10.244.0.2	head-49.ns.svc.cluster.local head-49.ns.svc head-49.ns" in lines


def test_a_namespaces_hosts_file_has_its_services_bare_names() -> None:
    """`redis:6379` from a pod of the Service's namespace, as the DNS search path resolves it."""
    other = service(cluster_ip="10.96.0.11")
    other["metadata"].update(name="redis", namespace="elsewhere")
    lines = hosts.hosts_file([service(), other], [], [], namespace="ns").splitlines()
    assert "10.96.0.10\thead-svc.ns.svc.cluster.local head-svc.ns.svc head-svc.ns head-svc" in lines
    assert (
        "10.96.0.11\tredis.elsewhere.svc.cluster.local redis.elsewhere.svc redis.elsewhere" in lines
    )
    shared = hosts.hosts_file([service()], [], []).splitlines()
    assert "10.96.0.10\thead-svc.ns.svc.cluster.local head-svc.ns.svc head-svc.ns" in shared


def test_hosts_file_is_rewritten_in_place(tmp_path: Any) -> None:
    path = tmp_path / "net" / "hosts"
    hosts.write_in_place(path, "a much longer first version\n")
    inode = path.stat().st_ino
    hosts.write_in_place(path, "short\n")
    assert path.read_text() == "short\n" and path.stat().st_ino == inode


def test_cluster_ip_listeners() -> None:
    headless = service(cluster_ip="None")
    udp = service(cluster_ip="10.96.0.11", ports=[{"name": "dns", "port": 53, "protocol": "UDP"}])
    assert service_proxy.listeners([service(), headless, udp]) == {
        ("10.96.0.10", 6379): ("ns", "head-svc", "gcs")
    }


@pytest.mark.parametrize(
    ("ip", "allowed"),
    [
        ("127.0.0.1", True),
        ("10.244.3.4", True),
        ("10.96.0.10", False),
        ("8.8.8.8", False),
        ("x", False),
    ],
)
def test_proxy_destinations_stay_local(ip: str, allowed: bool) -> None:
    assert service_proxy.allowed_destination(ip) is allowed


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/api/v1/namespaces/d/services/h:dashboard/proxy/api/version",
            ("services", "h", "http", "dashboard", "/api/version"),
        ),
        (
            "/api/v1/namespaces/d/services/https:h:8443/proxy",
            ("services", "h", "https", "8443", "/"),
        ),
        ("/api/v1/namespaces/d/pods/p/proxy/", ("pods", "p", "http", "", "/")),
        (
            "/api/v1/namespaces/d/services/h%3Adashboard/proxy/api%2Fserve%2F?x=1",
            ("services", "h", "http", "dashboard", "/api/serve/"),
        ),
        ("/api/v1/namespaces/d/services/h", None),
        ("/api/v1/namespaces/d/configmaps/h/proxy", None),
    ],
)
def test_proxy_urls(path: str, expected: tuple[str, ...] | None) -> None:
    target = proxy_subresource.parse(path)
    got = (
        None
        if target is None
        else (target.resource, target.name, target.scheme, target.port, target.path)
    )
    assert got == expected


def test_service_proxy_resolution() -> None:
    slices = endpoint_slices.slices(service(), [pod("a", "10.244.0.2")])
    assert proxy_subresource.resolve_service(service(), slices, "gcs") == [("10.244.0.2", 6380)]
    assert proxy_subresource.resolve_service(service(), slices, "6379") == [("10.244.0.2", 6380)]
    with pytest.raises(statuses.ApiError) as missing:
        proxy_subresource.resolve_service(service(), slices, "dashboard")
    assert missing.value.code == 503
    empty = endpoint_slices.slices(service(), [pod("a", "10.244.0.2", False)])
    with pytest.raises(statuses.ApiError, match="no endpoints available"):
        proxy_subresource.resolve_service(service(), empty, "")


@pytest.mark.parametrize(("port", "expected"), [("", 6380), ("gcs", 6380), ("8265", 8265)])
def test_pod_proxy_resolution(port: str, expected: int) -> None:
    assert proxy_subresource.resolve_pod(pod("a", "10.244.0.2"), port) == ("10.244.0.2", expected)


def _service_event(kind: str, name: str, selector: dict[str, str] | None) -> Any:
    from devcluster.store import Event

    body = {"metadata": {"name": name, "namespace": "ns"}, "spec": {"selector": selector}}
    return Event(kind, 1, endpoint_slices.SERVICES, body)


def test_selector_index_names_the_services_that_may_select_a_pod() -> None:
    index = endpoint_slices.SelectorIndex()
    index.follow(_service_event("ADDED", "head-svc", {"app": "head", "cluster": "c1"}))
    index.follow(_service_event("ADDED", "all", {"cluster": "c1"}))
    index.follow(_service_event("ADDED", "external", None))  # no selector: the user's
    head = pod("h", "10.0.0.1", labels={"app": "head", "cluster": "c1"})
    worker = pod("w", "10.0.0.2", labels={"app": "worker", "cluster": "c1"})
    assert index.candidates(head) == {"head-svc", "all"}
    assert index.candidates(worker) == {"all"}
    index.follow(_service_event("MODIFIED", "all", {"cluster": "c2"}))  # re-filed
    assert index.candidates(worker) == set()
    index.follow(_service_event("DELETED", "head-svc", {"app": "head", "cluster": "c1"}))
    assert index.candidates(head) == set()


def test_selector_index_files_a_service_under_its_rarest_pair() -> None:
    """A label every Ray Service selects on must not make every Service a candidate."""
    index = endpoint_slices.SelectorIndex()
    for n in range(50):
        selector = {"created-by": "kuberay", "ray.io/cluster": f"c{n}"}
        index.follow(_service_event("ADDED", f"c{n}-head-svc", selector))
    labels = {"created-by": "kuberay", "ray.io/cluster": "c7"}
    candidates = index.candidates(pod("p", "10.0.0.3", labels=labels))
    assert "c7-head-svc" in candidates
    assert len(candidates) <= 2  # the first Service filed, when nothing told the pairs apart
