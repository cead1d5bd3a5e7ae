"""Pure pieces of devcluster: patches, selectors, schemas, printing, validation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from devcluster import patching, schemas, selectors, statuses, tables, validation
from devcluster.builtin_kinds import builtin_kinds
from devcluster.crds import crd_causes
from devcluster.kinds import NameRule
from devcluster.pod_table import pod_cells

POD_KEYS = next(k for k in builtin_kinds() if k.plural == "pods").merge_keys
SERVICE_KEYS = next(k for k in builtin_kinds() if k.plural == "services").merge_keys


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2}},
            {"b": {"c": None, "d": 3}},
            {"a": 1, "b": {"d": 3}},
            id="nested-delete",
        ),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists-replace"),
        pytest.param({"a": 1}, {"a": None}, {}, id="remove"),
    ],
)
def test_merge_patch(target: Any, patch: Any, expected: Any) -> None:
    assert patching.merge_patch(target, patch) == expected


def test_json_patch_operations_and_failures() -> None:
    doc = {"a": {"b": [1, 2]}}
    ops = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "replace", "path": "/a/b/0", "value": 0},
        {"op": "copy", "from": "/a/b", "path": "/c"},
        {"op": "move", "from": "/c", "path": "/d"},
        {"op": "test", "path": "/d/2", "value": 3},
        {"op": "remove", "path": "/a/b/1"},
    ]
    assert patching.json_patch(doc, ops) == {"a": {"b": [0, 3]}, "d": [0, 2, 3]}
    assert doc == {"a": {"b": [1, 2]}}
    with pytest.raises(statuses.ApiError) as caught:
        patching.json_patch(doc, [{"op": "remove", "path": "/missing"}])
    assert caught.value.code == 500 and "missing" in caught.value.message
    # As kube-apiserver (json-patch v4), `replace` sets a missing key; the Ray autoscaler needs it.
    replaced = patching.json_patch(doc, [{"op": "replace", "path": "/a/s", "value": {"w": []}}])
    assert replaced == {"a": {"b": [1, 2], "s": {"w": []}}}


@pytest.mark.parametrize(
    ("target", "patch", "keys", "expected"),
    [
        pytest.param(
            {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}},
            {"spec": {"containers": [{"name": "b", "image": "z"}]}},
            POD_KEYS,
            {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]}},
            id="containers-by-name",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
            {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
            POD_KEYS,
            {"spec": {"containers": [{"name": "b"}]}},
            id="delete-directive",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1, "name": "p"}]}]}},
            {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 2}]}]}},
            POD_KEYS,
            {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "ports": [{"containerPort": 1, "name": "p"}, {"containerPort": 2}],
                        }
                    ]
                }
            },
            id="container-ports-by-containerPort",
        ),
        pytest.param(
            {"spec": {"ports": [{"port": 80, "name": "h"}]}},
            {"spec": {"ports": [{"port": 80, "name": "x"}]}},
            SERVICE_KEYS,
            {"spec": {"ports": [{"port": 80, "name": "x"}]}},
            id="service-ports-by-port",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a"]}},
            {"metadata": {"finalizers": ["b"]}},
            POD_KEYS,
            {"metadata": {"finalizers": ["a", "b"]}},
            id="finalizers-union",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
            {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}},
            POD_KEYS,
            {"spec": {"containers": [{"name": "b"}, {"name": "a"}]}},
            id="set-element-order",
        ),
        pytest.param(
            {"spec": {"x": {"a": 1}}},
            {"spec": {"x": {"$patch": "replace", "b": 2}}},
            POD_KEYS,
            {"spec": {"x": {"b": 2}}},
            id="replace-map",
        ),
    ],
)
def test_strategic_merge(target: Any, patch: Any, keys: Any, expected: Any) -> None:
    assert patching.strategic_merge(target, patch, keys) == expected


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b,c", {"a": "b"}, False),
        ("a!=b", {}, True),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x)", {"a": "x"}, False),
        ("!a", {"b": "1"}, True),
        ("", {}, True),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], matches: bool) -> None:
    match = selectors.matcher(selectors.parse_labels(selector), [])
    assert match({"metadata": {"labels": labels}}) is matches


def test_field_selectors_reject_unsupported_fields() -> None:
    fields = selectors.parse_fields("status.phase=Running", frozenset({"status.phase"}))
    match = selectors.matcher([], fields)
    assert match({"metadata": {}, "status": {"phase": "Running"}})
    with pytest.raises(statuses.ApiError) as caught:
        selectors.parse_fields("spec.x=1", frozenset())
    assert (
        caught.value.code == 400 and caught.value.message == 'field label not supported: "spec.x"'
    )


def test_schema_defaults_prunes_and_checks() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "n": {"type": "integer", "default": 3, "minimum": 1},
                    "port": {"x-kubernetes-int-or-string": True},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    obj = {"spec": {"mode": "c", "port": "http", "extra": 1, "free": {"any": 1}}}
    report = schemas.apply_schema(obj, schema)
    assert obj["spec"] == {"mode": "c", "port": "http", "free": {"any": 1}, "n": 3}
    assert report.unknown == ["spec.extra"]
    assert [(c.reason, c.field) for c in report.causes] == [
        ("FieldValueNotSupported", "spec.mode"),
        ("FieldValueRequired", "spec.name"),
    ]


@pytest.mark.parametrize(
    ("name", "rule", "ok"),
    [
        ("web-1", NameRule.DNS1035, True),
        ("1web", NameRule.DNS1035, False),
        ("a.b", NameRule.LABEL, False),
        ("a.b", NameRule.SUBDOMAIN, True),
        ("system:admin", NameRule.PATH, True),
        ("a/b", NameRule.PATH, False),
    ],
)
def test_name_rules(name: str, rule: NameRule, ok: bool) -> None:
    assert (validation.name_problems(name, rule) == []) is ok


def test_printer_column_jsonpath_and_age() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True"}], "n": [1, 2]}}
    assert tables.evaluate('.status.conditions[?(@.type=="Ready")].status', obj) == ["True"]
    assert tables.evaluate(".status.n[*]", obj) == [1, 2]
    from datetime import UTC, datetime

    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert tables.human_age("2026-01-02T03:04:00Z", now) == "5s"
    assert tables.human_age("2026-01-02T02:59:00Z", now) == "5m5s"
    assert tables.human_age("2025-12-30T03:04:05Z", now) == "3d"


@pytest.mark.parametrize(
    ("group", "annotations", "refused"),
    [
        pytest.param("ray.io", {}, False, id="our own group"),
        pytest.param("gateway.networking.k8s.io", {}, True, id="a Kubernetes group"),
        pytest.param("k8s.io", {}, True, id="k8s.io itself"),
        pytest.param("x.kubernetes.io", {}, True, id="kubernetes.io"),
        pytest.param(
            "gateway.networking.k8s.io",
            {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"},
            False,
            id="approved",
        ),
        pytest.param("cluster.x-k8s.io", {}, False, id="x-k8s.io is not protected"),
    ],
)
def test_crds_in_kubernetes_groups_need_the_api_approval(
    group: str, annotations: dict[str, str], refused: bool
) -> None:
    crd = {
        "metadata": {"name": f"things.{group}", "annotations": annotations},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    fields = [cause.field for cause in crd_causes(crd)]
    assert fields == (["metadata.annotations[api-approved.kubernetes.io]"] if refused else [])


def _pod_with(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-02T03:04:00Z", **meta},
        "spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]},
        "status": status,
    }


_DONE_INIT = {"name": "i", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}


@pytest.mark.parametrize(
    ("status", "meta", "ready", "shown", "restarts"),
    [
        pytest.param(
            {
                "phase": "Pending",
                "initContainerStatuses": [{"name": "i", "state": {"running": {}}}],
            },
            {},
            "0/1",
            "Init:0/1",
            "0",
            id="initialising",
        ),
        pytest.param(
            {
                "phase": "Running",
                "initContainerStatuses": [_DONE_INIT],
                "containerStatuses": [
                    {
                        "name": "a",
                        "restartCount": 3,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "lastState": {"terminated": {"finishedAt": "2026-01-02T03:04:55Z"}},
                    }
                ],
            },
            {},
            "0/1",
            "CrashLoopBackOff",
            "3 (10s ago)",
            id="crash loop",
        ),
        pytest.param(
            {
                "phase": "Succeeded",
                "initContainerStatuses": [_DONE_INIT],
                "containerStatuses": [
                    {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                ],
            },
            {},
            "0/1",
            "Completed",
            "0",
            id="completed",
        ),
        pytest.param(
            {
                "phase": "Failed",
                "initContainerStatuses": [_DONE_INIT],
                "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 3}}}],
            },
            {},
            "0/1",
            "ExitCode:3",
            "0",
            id="exit code without a reason",
        ),
        pytest.param(
            {
                "phase": "Running",
                "initContainerStatuses": [_DONE_INIT],
                "containerStatuses": [{"name": "a", "ready": True, "state": {"running": {}}}],
            },
            {"deletionTimestamp": "2026-01-02T03:05:00Z"},
            "1/1",
            "Terminating",
            "0",
            id="terminating",
        ),
    ],
)
def test_pods_print_as_kube_apiserver_prints_them(
    status: dict[str, Any], meta: dict[str, Any], ready: str, shown: str, restarts: str
) -> None:
    now = datetime(2026, 1, 2, 3, 5, 5, tzinfo=UTC)
    cells = pod_cells(_pod_with(status, **meta), now)
    assert cells[:5] == ["p", ready, shown, restarts, "65s"]
