"""`RecentReads`: an object comes back only as the version it was read at, of the same uid."""

from __future__ import annotations

from activities.kube import client as kube
from activities.kube.recent import RecentReads


def cluster(name: str, version: str, uid: str = "u1", **spec: object) -> kube.JSON:
    meta = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": version}
    return {"kind": "RayCluster", "metadata": meta, "spec": dict(spec)}


def test_the_version_read_comes_back_as_it_was_read() -> None:
    recent = RecentReads()
    obj = cluster("a", "7", replicas=2)
    assert recent.keep(kube.RAYCLUSTERS, obj) == "7"
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "7") == obj


def test_another_version_uid_kind_or_no_version_is_not_recalled() -> None:
    recent = RecentReads()
    recent.keep(kube.RAYCLUSTERS, cluster("a", "7"))
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "8") is None
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u2", "7") is None  # re-created namesake
    assert recent.recall(kube.RAYJOBS, "ns", "a", "u1", "7") is None
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "") is None
    recent.keep(kube.RAYCLUSTERS, cluster("a", "9"))  # a newer read replaces the older
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "7") is None
    assert len(recent) == 1


def test_the_least_recently_used_object_falls_out() -> None:
    recent = RecentReads(size=2)
    for name in ("a", "b"):
        recent.keep(kube.RAYCLUSTERS, cluster(name, "1"))
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "1") is not None  # a is used again
    recent.keep(kube.RAYCLUSTERS, cluster("c", "1"))
    assert recent.recall(kube.RAYCLUSTERS, "ns", "b", "u1", "1") is None
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "1") is not None
    assert len(recent) == 2


def test_an_object_that_cannot_be_kept_whole_is_not_kept() -> None:
    recent = RecentReads()
    recent.keep(kube.RAYCLUSTERS, cluster("a", "1"))
    deep = cluster("a", "2", x=object())  # what a too-deep CR decodes to: not JSON any more
    assert recent.keep(kube.RAYCLUSTERS, deep) == ""
    assert recent.recall(kube.RAYCLUSTERS, "ns", "a", "u1", "1") is None
    assert len(recent) == 0
