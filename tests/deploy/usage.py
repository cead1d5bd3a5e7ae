"""Which (verb, group, resource) each component uses, derived from its code by a static scan.

Why a scan and not a recording client: a recorder only sees the paths some test happens to
exercise, so a permission needed on a rare path (a cleanup Job, a forced finalizer removal)
would be missed and found in production as a 403. The scan sees every call site.

How: every call of a `KubeClient` method (`get`, `create_or_get`, `patch`, …) whose first
argument is a resource constant of `activities.kube.client` (`kube.PODS`) is one use, mapped to the
verbs the method sends. A call whose resource is held in a variable (`owned.resource`,
`target.resource`) cannot be resolved where it stands; its resource came from a table, and
the tables are exactly the places where the component names resource constants *outside* a
call (`cluster_objects._RESOURCES`, `bridge.targets`), so such a call is counted against every
one of those. `patch(..., sub="status")` is a use of the subresource; a `sub` held in a
variable counts as the object and every subresource named in that module. A raw
`request("PUT", <resource>.path(namespace, name))` is resolved the same way (PUT is `update`);
a raw request whose method or path is computed makes the scan fail. `activities/kube/client.py`
itself is the generic client and is not scanned; nor are the generic list-and-watch loop, the
copy built on it and the pass's kept reads (`GENERIC`): each call of one of their entry points
(`GENERIC_CALLS`: `ListWatch(kube, <resource>, ...)` and `Informer(...)` list and watch their
second argument, `cached_or_live(kube, copy, <resource>, ...)` and `same_as_of(...)` get their
third,
`replace_status(kube, recent, <resource>, ...)` gets it and patches its status,
`patch_version(kube, <resource>, ...)` patches its second) is resolved
like a call's resource.

Dashboard calls are not `KubeClient` calls, yet with `KUBERAY_TEMPORAL_DASHBOARD_ACCESS=proxy`
each is a request to the API server's `services/proxy` or `pods/proxy` subresource, checked
with the verb of its HTTP method (GET is `get`, POST `create`, PUT `update`). `proxy_uses`
finds them: every call of a proxy URL builder (`PROXY_BUILDERS`) in the activities, and the
HTTP methods of the `RayDashboardClient` methods that URL is given to.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from activities.raycluster import owned_objects as cluster_objects
from activities.kube import client as kube
from activities.dashboard.client import PROXY_VERBS
from tests.reference import REPO_ROOT

# KubeClient method -> the API verbs it sends.
VERBS: dict[str, tuple[str, ...]] = {
    "get": ("get",),
    "get_or_none": ("get",),
    "get_same": ("get",),
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
# Entry points of the generic modules, called by name -> the position of the resource among
# their arguments and the (verb, subresource) pairs one call sends.
GENERIC_CALLS: dict[str, tuple[int, tuple[tuple[str, str], ...]]] = {
    "ListWatch": (1, (("list", ""), ("watch", ""))),
    "Informer": (1, (("list", ""), ("watch", ""))),
    "cached_or_live": (2, (("get", ""),)),  # what the copy lacks is read live
    "same_as_of": (2, (("get", ""),)),  # what the copy cannot answer is read live
    "replace_status": (2, (("get", ""), ("patch", "status"))),
    "patch_version": (1, (("patch", ""),)),
}
GENERIC = ("kube.py", "list_watch.py", "informer.py", "recent.py")
NO_REQUEST = {"keep", "recall"}
"""Methods of the kept reads (`RecentReads`) that name a resource and send nothing."""
"""Modules that take their resource from their callers (the scan reads the callers)."""
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
    if method in GENERIC_CALLS:
        return {
            (verb, resource.group, f"{resource.plural}/{sub}" if sub else resource.plural)
            for verb, sub in GENERIC_CALLS[method][1]
        }
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
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in GENERIC_CALLS:
                method, at = node.func.id, GENERIC_CALLS[node.func.id][0]
                if len(node.args) <= at:
                    raise AssertionError(
                        f"{module}:{node.lineno}: the resource is not argument {at}"
                    )
                target = node.args[at]
                resource = _resource_constant(target)
                if resource is not None:
                    in_calls.add(id(target))
                    direct |= _uses(method, resource, {""})
                else:
                    dynamic.append((CallSite(module, node.lineno, method), {""}))
                continue
            if not isinstance(node.func, ast.Attribute):
                continue
            if node.func.attr in NO_REQUEST and node.args:
                in_calls.add(id(node.args[0]))  # not a table: the resource is named, not used
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
    return scan(package_modules("activities", skip=GENERIC), narrowing)


def bridge_scan() -> Scan:
    """The bridge package."""
    return scan(package_modules("bridge"))


OWNER_BUILDER = "controller_reference"
"""The one builder of owner references, always with `blockOwnerDeletion` (test_rbac.py)."""


def owner_uses() -> set[Use]:
    """What blocking an owner's deletion takes: `update` on the owner's `finalizers`.

    The OwnerReferencesPermissionEnforcement admission plugin refuses an object whose owner
    reference sets `blockOwnerDeletion` unless its creator may update the owner's
    `finalizers` subresource. Each `controller_reference("<Kind>", ...)` call in the
    activities is one such owner; a kind that is not a literal fails the scan.
    """
    uses: set[Use] = set()
    for path in package_modules("activities"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name != OWNER_BUILDER:
                continue
            kind = node.args[0] if node.args else None
            if not (isinstance(kind, ast.Constant) and isinstance(kind.value, str)):
                where = f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
                raise AssertionError(f"{where}: the owner's kind cannot be resolved")
            uses.add(("update", "ray.io", f"{kind.value.lower()}s/finalizers"))
    return uses


# The API server proxy URL builders of `activities.dashboard.urls` -> the subresource their
# URLs go through (test_rbac.py checks this against the URLs they build).
PROXY_BUILDERS: dict[str, str] = {
    "proxied_base_url": "services/proxy",
    "pod_proxied_base_url": "pods/proxy",
}
DASHBOARD_MODULE = REPO_ROOT / "activities" / "dashboard" / "client.py"
URLS_MODULE = REPO_ROOT / "activities" / "dashboard" / "urls.py"
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _own_nodes(function: _Function) -> list[ast.AST]:
    """The nodes of a function's body, less those of functions nested in it."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, _Function | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _self_calls(function: _Function) -> list[tuple[str, ast.Call]]:
    """`(method, call)` for each `self.<method>(...)` in a function."""
    return [
        (node.func.attr, node)
        for node in _own_nodes(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) == "self"
    ]


def client_methods() -> dict[str, set[str]]:
    """The HTTP methods each `RayDashboardClient` method sends, through its own helpers too.

    A request is a `self._request(...)` or `self._send(...)` whose first argument is the HTTP
    method. It must be a literal, except where a helper passes its own `method` parameter on
    (`_request` to `_send`): its callers' literals are counted already. Anything else fails.
    """
    tree = ast.parse(DASHBOARD_MODULE.read_text(), str(DASHBOARD_MODULE))
    (client,) = [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == "RayDashboardClient"
    ]
    sends: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for function in client.body:
        if not isinstance(function, _Function):
            continue
        sends[function.name], calls[function.name] = set(), set()
        passed_on = "method" in {a.arg for a in function.args.args}
        for callee, call in _self_calls(function):
            calls[function.name].add(callee)
            if callee not in ("_request", "_send"):
                continue
            first = call.args[0] if call.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                sends[function.name].add(first.value)
            elif not (passed_on and isinstance(first, ast.Name) and first.id == "method"):
                where = f"{DASHBOARD_MODULE.name}:{call.lineno}"
                raise AssertionError(f"{where}: the HTTP method cannot be resolved")

    def reach(name: str, seen: frozenset[str]) -> set[str]:
        found = set(sends.get(name, ()))
        for callee in calls.get(name, set()) - seen:
            found |= reach(callee, seen | {callee})
        return found

    return {name: reach(name, frozenset({name})) for name in sends}


def _builder(node: ast.AST) -> str | None:
    """The proxy URL builder a call calls, if it is one."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name if name in PROXY_BUILDERS else None


def _methods_given(function: _Function, built: ast.Call, methods: dict[str, set[str]]) -> set[str]:
    """What a proxy URL built in `function` carries.

    Handed (directly or through a local name) to a client method in the same function: what
    that method sends. Anything else (returned, stored) becomes a client's base URL, which
    carries everything the client sends.
    """
    nodes = _own_nodes(function)
    names = {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and node.value is built
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    sent: set[str] = set()
    handed = False
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in methods:
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if arg is built or (isinstance(arg, ast.Name) and arg.id in names):
                handed = True
                sent |= methods[node.func.attr]
    return sent if handed else set().union(*methods.values())


def proxy_uses() -> set[Use]:
    """What the worker asks of the API server's proxy when dashboard access is `proxy`."""
    methods = client_methods()
    uses: set[Use] = set()
    for path in package_modules("activities"):
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, _Function):
                continue
            for node in _own_nodes(function):
                name = _builder(node)
                if name is None:
                    continue
                assert isinstance(node, ast.Call)
                for method in _methods_given(function, node, methods):
                    uses.add((PROXY_VERBS[method], "", PROXY_BUILDERS[name]))
    return uses
