"""The store's label index (`Store.selected` finds what a full scan would) and its copies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devcluster.decoding import parse_body
from devcluster.store import PODS, Store, copied

JsonObject = dict[str, Any]


def pod(name: str, namespace: str = "ns", **labels: str) -> JsonObject:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def names(objects: list[JsonObject]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def test_selected_follows_creates_relabels_and_removes(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.open()
    store.put(PODS, pod("b", cluster="c1", role="worker"))
    store.put(PODS, pod("a", cluster="c1", role="head"))
    store.put(PODS, pod("x", cluster="c2", role="head"))
    store.put(PODS, pod("o", namespace="other", cluster="c1", role="head"))
    assert names(store.selected(PODS, "ns", {"cluster": "c1"})) == ["a", "b"]
    assert names(store.selected(PODS, "ns", {"cluster": "c1", "role": "head"})) == ["a"]
    assert names(store.selected(PODS, "ns", {})) == ["a", "b", "x"]
    store.put(PODS, pod("b", cluster="c2", role="worker"))  # relabelled: leaves c1
    assert names(store.selected(PODS, "ns", {"cluster": "c1"})) == ["a"]
    assert names(store.selected(PODS, "ns", {"cluster": "c2"})) == ["b", "x"]
    store.remove(PODS, "ns", "x")
    assert names(store.selected(PODS, "ns", {"cluster": "c2"})) == ["b"]
    assert store.selected(PODS, "ns", {"cluster": "c3"}) == []
    store.close()


def test_selected_after_reopening(tmp_path: Path) -> None:
    """The index is memory only: opening the database again rebuilds it."""
    store = Store(tmp_path / "db")
    store.open()
    store.put(PODS, pod("a", cluster="c1"))
    store.put(PODS, pod("b", cluster="c2"))
    store.close()
    again = Store(tmp_path / "db")
    again.open()
    assert names(again.selected(PODS, "ns", {"cluster": "c2"})) == ["b"]
    again.close()


def test_copied_shares_nothing_mutable() -> None:
    original = {"spec": {"containers": [{"ports": [1]}]}, "odd": ({"in": "tuple"},), "n": 1.5}
    copy = copied(original)
    assert copy == original
    copy["spec"]["containers"][0]["ports"].append(2)
    copy["odd"][0]["in"] = "changed"
    assert original == {
        "spec": {"containers": [{"ports": [1]}]},
        "odd": ({"in": "tuple"},),
        "n": 1.5,
    }


def test_copied_stores_a_decoded_body_as_plain_dicts() -> None:
    """Request bodies decode to a dict subclass that remembers duplicate keys; the stored
    copy is plain JSON, so later copies stay on the fast path and report nothing stale."""
    raw = b'{"metadata": {"name": "a", "labels": {"x": "1"}}}'
    body = parse_body(raw, "application/json", "Pod")
    assert type(body) is not dict  # the decoder's subclass
    stored = copied(body)
    assert stored == {"metadata": {"name": "a", "labels": {"x": "1"}}}
    assert type(stored) is dict and type(stored["metadata"]["labels"]) is dict
