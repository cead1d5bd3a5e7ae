"""What two operators made, reduced to what should be the same: pure functions over JSON.

Each capture is one namespace's objects. `normalise` drops what the API server or chance
decides (uids, resource versions, cluster IPs, pod status) and replaces the namespace's name
with `NS`, random name suffixes with `-?????`, addresses with `IP`, uids with `UID`, times with
`TIME` and the NodePorts the API server drew with `NODEPORT`; `differences` walks two
normalised objects side by side and names each path where they part, keying lists of named
things (containers, env, ports, volumes, conditions) by name, so an order change is one
difference of its own (`(order)`), not one per item. An absent map and an empty one are the
same (Go cannot omit an empty struct such as a template's `metadata`, so KubeRay writes `{}`
where the manifest had nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

NAMESPACE_MARK = "NS"
SUFFIX_MARK = "-?????"
ADDRESS_MARK = "IP"
TIME_MARK = "TIME"
UID_MARK = "UID"
NODE_PORT_MARK = "NODEPORT"
NODE_PORTS = (30000, 32767)
"""kube-apiserver's default `--service-node-port-range`, from which it draws NodePorts."""
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
# Kubernetes' random-string alphabet (apimachinery's rand.String): no vowels, no 0, 1, 3.
_SUFFIX = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{5}(?![a-z0-9])")
_DROPPED_METADATA = frozenset(
    {"uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"}
)
_DROPPED_SPEC = frozenset({"clusterIP", "clusterIPs", "nodeName", "volumeName"})
SECRET_MARK = "SECRET"


def without_secret_values(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret with each value replaced by a mark: which keys it holds is compared, never
    what they hold (a token drawn by each operator; and a test's output must not show it)."""
    if obj.get("kind") != "Secret":
        return obj
    masked = dict(obj)
    for field in ("data", "stringData"):
        if isinstance(obj.get(field), dict):
            masked[field] = dict.fromkeys(obj[field], SECRET_MARK)
    return masked


def normalise(obj: Any, namespace: str) -> Any:
    """A copy of `obj` without what differs by chance, for a capture made in `namespace`."""
    return _clean(obj, namespace, ())


def _clean(value: Any, namespace: str, path: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if path[-1:] == ("metadata",) and key in _DROPPED_METADATA:
                continue
            if path[-1:] == ("spec",) and key in _DROPPED_SPEC:
                continue
            if path[-1:] == ("ownerReferences",) and key == "uid":
                continue
            if _node_port(path, key, item):
                kept[key] = NODE_PORT_MARK
                continue
            kept[_text(key, namespace)] = _clean(item, namespace, (*path, key))
        return kept
    if isinstance(value, list):
        return [_clean(item, namespace, path) for item in value]
    if isinstance(value, str):
        return _text(value, namespace)
    return value


def _node_port(path: tuple[str, ...], key: str, value: Any) -> bool:
    """Whether `value` is a NodePort the API server drew: a Service port's `nodePort`, or a
    RayCluster's `status.endpoints` entry naming one (KubeRay's endpoints give the NodePort
    when there is one, else the target port, which is never in the NodePort range)."""
    if path[-2:] == ("spec", "ports") and key == "nodePort":
        return True
    if path[-2:] == ("status", "endpoints") and isinstance(value, str) and value.isdigit():
        return NODE_PORTS[0] <= int(value) <= NODE_PORTS[1]
    return False


def _text(text: str, namespace: str) -> str:
    if _ADDRESS.fullmatch(text):  # pod and Service addresses: which one is chance
        return ADDRESS_MARK
    if _UID.fullmatch(text):  # a uid in a label (the Job controller's controller-uid)
        return UID_MARK
    if _TIME.fullmatch(text):  # when: a second either way is chance (that one was written is not)
        return TIME_MARK
    return _SUFFIX.sub(SUFFIX_MARK, text.replace(namespace, NAMESPACE_MARK))


@dataclass(frozen=True)
class Difference:
    """One path where the two sides part; a side is None where it has nothing."""

    path: str
    kuberay: Any
    ours: Any

    def __str__(self) -> str:
        return f"{self.path}: KubeRay {self.kuberay!r}, ours {self.ours!r}"


def differences(kuberay: Any, ours: Any, path: str = "") -> Iterator[Difference]:
    """Every path where `kuberay` and `ours` part, deepest first found."""
    if isinstance(kuberay, dict) and ours is None:
        ours = {}
    elif kuberay is None and isinstance(ours, dict):
        kuberay = {}
    if isinstance(kuberay, dict) and isinstance(ours, dict):
        for key in sorted(set(kuberay) | set(ours)):
            yield from differences(kuberay.get(key), ours.get(key), f"{path}/{key}")
    elif isinstance(kuberay, list) and isinstance(ours, list) and _named(kuberay + ours):
        theirs, mine = _by_name(kuberay), _by_name(ours)
        for name in sorted(set(theirs) | set(mine)):
            yield from differences(theirs.get(name), mine.get(name), f"{path}[{name}]")
        if [*theirs] != [*mine] and set(theirs) == set(mine):
            yield Difference(f"{path}(order)", [*theirs], [*mine])
    elif isinstance(kuberay, list) and isinstance(ours, list) and len(kuberay) == len(ours):
        for index, (a, b) in enumerate(zip(kuberay, ours, strict=True)):
            yield from differences(a, b, f"{path}[{index}]")
    elif kuberay != ours:
        yield Difference(path or "/", kuberay, ours)


def _named(items: Iterable[Any]) -> bool:
    listed = list(items)
    return bool(listed) and all(isinstance(i, dict) and _key(i) is not None for i in listed)


def _key(item: dict[str, Any]) -> str | None:
    for field in ("name", "type", "kind", "containerPort", "mountPath"):
        if field in item:
            return str(item[field])
    return None


def _by_name(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {str(_key(item)): item for item in items}


def event_differences(
    kuberay: set[tuple[str, ...]], ours: set[tuple[str, ...]]
) -> list[Difference]:
    """One difference per Event reason only one side recorded: `/events/<kind>/<type>/<reason>`,
    True on the side that has it. Each is accepted or not on its own, whatever else the
    namespace recorded (it keeps the Events of earlier scenarios)."""
    return [
        Difference(f"/events/{'/'.join(event)}", event in kuberay or None, event in ours or None)
        for event in sorted(kuberay ^ ours)
    ]


def same_course(kuberay: list[tuple[str, ...]], ours: list[tuple[str, ...]]) -> bool:
    """Whether two sequences of states tell the same course.

    A state is a tuple: its first field is the course (a cluster's `state`, a RayJob's
    `jobDeploymentStatus`), the others (a RayJob's `jobStatus`, which a poll sees PENDING or
    RUNNING by chance) count only at the end. The last states must be equal, and one course
    must pass through every step of the other in order: a step one operator wrote between
    two polls of the other may be missing, one neither shares or out of order may not.
    """
    if kuberay[-1:] != ours[-1:]:
        return False
    shorter, longer = sorted((_course(kuberay), _course(ours)), key=len)
    remaining = iter(longer)
    return all(step in remaining for step in shorter)


def _course(states: list[tuple[str, ...]]) -> list[str]:
    steps: list[str] = []
    for state in states:
        if state and (not steps or steps[-1] != state[0]):
            steps.append(state[0])
    return steps
