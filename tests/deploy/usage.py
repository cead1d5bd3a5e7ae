"""Which (verb, group, resource) each component uses, derived from its code by a static scan.

Why a scan and not a recording client: a recorder only sees the paths some test happens to
exercise, so a permission needed on a rare path (a cleanup Job, a forced finalizer removal)
would be missed and found in production as a 403. The scan sees every call site.

How: every call of a `KubeClient` method (`get`, `create_or_get`, `patch`, …) whose first
argument is a resource constant of `activities.kube` (`kube.PODS`) is one use, mapped to the
verbs the method sends. A call whose resource is held in a variable (`owned.resource`,
`target.resource`) cannot be resolved where it stands; its resource came from a table, and
the tables are exactly the places where the component names resource constants *outside* a
call (`cluster_objects._RESOURCES`, `bridge.targets`), so such a call is counted against every
one of those. `patch(..., sub="status")` is a use of the subresource; a `sub` held in a
variable counts as the object and every subresource named in that module. A raw
`request("PUT", <resource>.path(namespace, name))` is resolved the same way (PUT is `update`);
a raw request whose method or path is computed makes the scan fail. `activities/kube.py`
itself is the generic client and is not scanned.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from activities import cluster_objects, kube
from tests.reference import REPO_ROOT

# KubeClient method -> the API verbs it sends.
VERBS: dict[str, tuple[str, ...]] = {
    "get": ("get",),
    "get_or_none": ("get",),
    "list_all": ("list",),
    "list_versioned": ("list",),
    "watch": ("watch",),
    "create": ("create",),
    "create_or_get": ("create", "get"),
    "patch": ("patch",),
    "delete": ("delete",),
    "delete_collection": ("deletecollection",),
    "update": ("update",),  # only through a raw PUT request
}
# Receivers that hold a KubeClient in our code, to tell `client.get(...)` from `dict.get(...)`.
RECEIVERS = {"self._kube", "self.kube", "self._client", "client", "kube_client"}
RESOURCES: dict[str, kube.Resource] = {
    name: value for name, value in vars(kube).items() if isinstance(value, kube.Resource)
}

Use = tuple[str, str, str]
"""(verb, apiGroup, resource[/subresource])."""


@dataclass(frozen=True)
class CallSite:
    """One KubeClient call whose resource is held in a variable."""

    module: str
    line: int
    method: str


def _resource_constant(node: ast.expr) -> kube.Resource | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "kube"
        and node.attr in RESOURCES
    ):
        return RESOURCES[node.attr]
    if isinstance(node, ast.Name) and node.id in RESOURCES:
        return RESOURCES[node.id]
    return None


def _subresources(call: ast.Call, module_subs: set[str]) -> set[str]:
    for keyword in call.keywords:
        if keyword.arg == "sub":
            if isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                return {keyword.value.value}
            return {"", *module_subs}
    return {""}


# HTTP method of a raw request -> (KubeClient-like method for an object, for a collection).
_RAW: dict[str, tuple[str, str]] = {
    "GET": ("get", "list_all"),
    "POST": ("create", "create"),
    "PUT": ("update", "update"),
    "PATCH": ("patch", "patch"),
    "DELETE": ("delete", "delete_collection"),
}


def _raw_request(call: ast.Call, where: str) -> tuple[str, ast.expr]:
    """Resolve `request("PUT", <resource>.path(namespace, name), …)` to a method and resource.

    Anything else (a computed method or path) cannot be resolved and fails the scan.
    """
    verb, path = (call.args[0], call.args[1]) if len(call.args) >= 2 else (None, None)
    if not (
        isinstance(verb, ast.Constant)
        and verb.value in _RAW
        and isinstance(path, ast.Call)
        and isinstance(path.func, ast.Attribute)
        and path.func.attr == "path"
        and not path.keywords
    ):
        raise AssertionError(f"{where}: raw request() cannot be resolved")
    on_object, on_collection = _RAW[verb.value]
    return (on_object if len(path.args) >= 2 else on_collection), path.func.value


def _uses(method: str, resource: kube.Resource, subs: set[str]) -> set[Use]:
    return {
        (verb, resource.group, f"{resource.plural}/{sub}" if sub else resource.plural)
        for verb in VERBS[method]
        for sub in subs
    }


@dataclass
class Scan:
    """What one component's modules use."""

    uses: set[Use]
    dynamic: list[CallSite]
    tables: set[str]
    """Resource constants named outside a call: where variable resources come from."""


def scan(paths: list[Path], narrowing: dict[str, set[str]] | None = None) -> Scan:
    """Scan the modules at `paths` (see the module docstring for the rules).

    `narrowing` maps a method to the table constants its variable-resource calls can reach,
    where the code restricts them further than "any table" (see `worker_scan`).
    """
    direct: set[Use] = set()
    dynamic: list[tuple[CallSite, set[str]]] = []
    tables: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        module = str(path.relative_to(REPO_ROOT))
        module_subs = {
            kw.value.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            for kw in node.keywords
            if kw.arg == "sub" and isinstance(kw.value, ast.Constant) and kw.value.value
        }
        in_calls: set[int] = set()
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method, receiver = node.func.attr, ast.unparse(node.func.value)
            if method == "request" and receiver in RECEIVERS:
                method, target = _raw_request(node, f"{module}:{node.lineno}")
            elif method in VERBS and node.args:
                target = node.args[0]
            else:
                continue
            resource = _resource_constant(target)
            subs = _subresources(node, module_subs)
            if resource is not None:
                in_calls.add(id(target))
                direct |= _uses(method, resource, subs)
            elif receiver in RECEIVERS:
                dynamic.append((CallSite(module, node.lineno, method), subs))
        for node in ast.walk(tree):
            if id(node) not in in_calls and isinstance(node, ast.Attribute | ast.Name):
                resource = _resource_constant(node)
                if resource is not None and not isinstance(node.ctx, ast.Store):
                    tables.add(node.attr if isinstance(node, ast.Attribute) else node.id)
    uses = set(direct)
    for site, subs in dynamic:
        for name in (narrowing or {}).get(site.method, tables):
            uses |= _uses(site.method, RESOURCES[name], subs)
    return Scan(uses, [site for site, _ in dynamic], tables)


def package_modules(package: str, *, skip: tuple[str, ...] = ()) -> list[Path]:
    """Every module of a top-level package, recursively, less those named in `skip`."""
    root = REPO_ROOT / package
    return sorted(p for p in root.rglob("*.py") if p.name not in skip)


def worker_scan() -> Scan:
    """The activities: everything the worker does to the Kubernetes API.

    One narrowing, read from the code rather than written here: an owned object is rewritten
    (PUT) only when its kind has an update rule in `cluster_objects._UPDATE_RULES`, so
    `update` reaches those kinds' resources, not every table entry.
    """
    narrowing = {}
    rules = getattr(cluster_objects, "_UPDATE_RULES", None)
    if rules is not None:
        by_kind = cluster_objects._RESOURCES
        names = {value: name for name, value in RESOURCES.items()}
        narrowing["update"] = {names[by_kind[kind]] for kind in rules}
    return scan(package_modules("activities", skip=("kube.py",)), narrowing)


def bridge_scan() -> Scan:
    """The bridge package."""
    return scan(package_modules("bridge"))
