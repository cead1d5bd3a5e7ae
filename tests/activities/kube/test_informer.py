"""The worker's copy of a resource: as new as asked, or it answers nothing.

Against devcluster (real list and watch streams), and a scripted API for a broken stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from activities.kube import client as kube
from activities.kube import list_watch
from activities.kube.client import KubeClient
from activities.kube.errors import KubeUnavailable
from activities.kube.informer import Informer
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(60)


def pod(name: str, cluster: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"ray.io/cluster": cluster}},
        "spec": {"containers": [{"name": "ray", "image": "rayproject/ray"}]},
    }


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    try:
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def names(informer: Informer, cluster: str) -> list[str]:
    return [p["metadata"]["name"] for p in informer.labelled("default", cluster)]


async def test_it_keeps_the_labelled_objects_by_label_value(client: KubeClient) -> None:
    await client.create(kube.PODS, "default", pod("a-head", "a"))
    unlabelled = pod("loose", "x")
    unlabelled["metadata"]["labels"] = {}
    await client.create(kube.PODS, "default", unlabelled)
    informer = Informer(client, kube.PODS, "ray.io/cluster")
    assert not informer.whole and not await informer.reached("default", 0, 0.1)

    async with running(informer):
        assert await eventually(lambda: informer.whole)
        assert names(informer, "a") == ["a-head"] and len(informer) == 1
        created = await client.create(kube.PODS, "default", pod("a-worker", "a"))
        version = int(created["metadata"]["resourceVersion"])
        assert await informer.reached("default", version, 10)
        assert names(informer, "a") == ["a-head", "a-worker"]
        await client.patch(
            kube.PODS, "default", "a-worker", {"metadata": {"labels": {"ray.io/cluster": "b"}}}
        )
        await client.delete(kube.PODS, "default", "a-head")
        assert await eventually(
            lambda: names(informer, "a") == [] and names(informer, "b") == ["a-worker"]
        )
        kept = informer.labelled("default", "b")[0]
        assert "managedFields" not in kept["metadata"] and kept["spec"]["containers"]


async def test_summaries_follow_the_objects_and_need_a_whole_copy(client: KubeClient) -> None:
    """A reader of every object (the watch of running Ray jobs) reads digests, not objects."""

    def image(obj: dict[str, Any]) -> str | None:
        containers = obj["spec"]["containers"]
        return str(containers[0]["image"]) if obj["metadata"]["name"] != "skipped" else None

    await client.create(kube.PODS, "default", pod("a-head", "a"))
    informer = Informer(client, kube.PODS, "ray.io/cluster", summarize=image)
    assert informer.summaries() == []  # not listed yet: nothing it could vouch for
    async with running(informer):
        assert await eventually(lambda: informer.summaries() == ["rayproject/ray"])
        other = pod("a-worker", "a")
        other["spec"]["containers"][0]["image"] = "rayproject/ray:2.50.0"
        await client.create(kube.PODS, "default", other)
        await client.create(kube.PODS, "default", pod("skipped", "a"))
        await client.delete(kube.PODS, "default", "a-head")
        assert await eventually(lambda: informer.summaries() == ["rayproject/ray:2.50.0"])
    assert informer.summaries() == []  # stopped


async def test_a_version_not_reached_in_time_is_refused(client: KubeClient) -> None:
    informer = Informer(client, kube.PODS, "ray.io/cluster")
    async with running(informer):
        assert await eventually(lambda: informer.whole)
        assert not await informer.reached("default", 10**12, 0.2)
        assert await informer.reached("default", 0, 0)


class BreakingApi:
    """Lists one pod, then every watch fails: the copy may be old from then on."""

    def __init__(self) -> None:
        self.watches = 0
        self.lists = 0

    async def list_versioned(
        self, resource: kube.Resource, namespace: str | None, label_selector: str = ""
    ) -> tuple[list[Any], str]:
        self.lists += 1
        if self.lists > 1:  # the re-list fails too: nothing tells it is whole again
            raise KubeUnavailable("connection refused")
        listed = pod("p", "c")
        listed["metadata"].update(namespace="default", resourceVersion="5")
        return [listed], "5"

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.watches += 1
        return self._broken()

    async def _broken(self) -> AsyncIterator[Any]:
        raise KubeUnavailable("watch of pods broke")
        yield {}  # an async generator, so the failure comes from the iteration


class EndingApi:
    """Lists nothing, then each watch ends at once, as one whose timeout has passed; past
    `ending` watches (None: never), the next stays open."""

    def __init__(self, ending: int | None = None) -> None:
        self.lists = 0
        self.watches = 0
        self.ending = ending

    async def list_versioned(
        self, resource: kube.Resource, namespace: str | None, label_selector: str = ""
    ) -> tuple[list[Any], str]:
        self.lists += 1
        return [], "7"

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.watches += 1
        if self.ending is not None and self.watches > self.ending:
            return self._open()
        return self._ended()

    async def _ended(self) -> AsyncIterator[Any]:
        await asyncio.sleep(0)
        for _ in ():
            yield {}

    async def _open(self) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield {}


async def test_a_copy_lists_again_only_when_its_stream_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A watch that ends without an error has missed nothing: it is taken up again from the
    version it reached, with no list of every object (KubeRay's informers do the same), however
    long it runs: here each look at the clock is a minute later."""
    minutes = itertools.count()
    clock = types.SimpleNamespace(monotonic=lambda: 60.0 * next(minutes))
    monkeypatch.setattr(list_watch, "time", clock)
    api = EndingApi()
    informer = Informer(api, kube.PODS, "ray.io/cluster")  # type: ignore[arg-type]
    async with running(informer):
        assert await eventually(lambda: api.watches >= 20)
        assert informer.whole
    assert api.lists == 1


async def test_a_broken_stream_answers_nothing_until_listed_again() -> None:
    api = BreakingApi()
    informer = Informer(api, kube.PODS, "ray.io/cluster")  # type: ignore[arg-type]
    async with running(informer):
        assert await eventually(lambda: api.watches >= 1)
        assert names(informer, "c") == ["p"]  # kept, but not offered
        assert not informer.whole and not await informer.reached("default", 0, 0)


async def test_a_stopped_informer_answers_nothing(client: KubeClient) -> None:
    informer = Informer(client, kube.PODS, "ray.io/cluster")
    async with running(informer):
        assert await eventually(lambda: informer.whole)
    assert not informer.whole


class QuietApi:
    """Lists `items` at the resourceVersion given for the namespace, then watches quietly."""

    def __init__(self, items: list[Any], versions: dict[str | None, str]) -> None:
        self.items, self.versions = items, versions

    async def list_versioned(
        self, resource: kube.Resource, namespace: str | None, label_selector: str = ""
    ) -> tuple[list[Any], str]:
        return self.items, self.versions[namespace]

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        return self._quiet()

    async def _quiet(self) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield {}


async def test_each_namespace_answers_for_its_own_stream() -> None:
    """Regression: one version for all streams let a read in `b` trust `a`'s progress."""
    api = QuietApi([], {"a": "10", "b": "3"})
    informer = Informer(api, kube.PODS, "ray.io/cluster", namespaces=["a", "b"])  # type: ignore[arg-type]
    async with running(informer):
        assert await eventually(lambda: informer.whole)
        assert await informer.reached("a", 5, 0)
        assert not await informer.reached("b", 5, 0.1)
        assert not await informer.reached("c", 0, 0)  # nobody watches it


class Failing:
    """Whose list raises what the loop does not expect (not a KubeError)."""

    async def list_versioned(self, *args: Any, **kwargs: Any) -> tuple[list[Any], str]:
        raise RuntimeError("a bug")


async def test_a_copy_that_fails_says_so_and_answers_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    informer = Informer(Failing(), kube.PODS, "ray.io/cluster")  # type: ignore[arg-type]
    await informer.run()  # ends, logging why, instead of leaving a failed task behind
    assert not informer.whole and not await informer.reached("default", 0, 0)
    assert "the copy of pods stopped; reads go to the API server" in caplog.text


async def test_a_kind_without_its_crd_says_so(
    client: KubeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A bridge on a cluster with older CRDs (no RayCronJob) names what is missing."""
    missing = kube.Resource("ray.io", "v1", "raynothings")
    informer = Informer(client, missing, "ray.io/cluster")
    async with running(informer):
        await eventually(lambda: "raynothings: not served" in caplog.text)
    assert "is its CRD installed?" in caplog.text


async def test_get_answers_only_what_a_whole_copy_holds() -> None:
    api = BreakingApi()
    informer = Informer(api, kube.PODS, "ray.io/cluster")  # type: ignore[arg-type]
    assert informer.get("default", "p") is None  # not listed yet
    async with running(informer):
        assert await eventually(lambda: api.watches >= 1)
        assert informer.get("default", "p") is None  # kept, but the stream broke

    quiet = QuietApi([pod("p", "c") | {"metadata": {"name": "p", "namespace": "a"}}], {"a": "1"})
    informer = Informer(quiet, kube.PODS, "ray.io/cluster", namespaces=["a"])  # type: ignore[arg-type]
    async with running(informer):
        assert await eventually(lambda: informer.whole)
        got = informer.get("a", "p")
        assert got is not None and got["metadata"]["name"] == "p"
        assert informer.get("a", "missing") is None
        assert informer.get("b", "p") is None  # nobody watches b


async def test_an_empty_selector_keeps_every_object(client: KubeClient) -> None:
    unlabelled = pod("bare", "x")
    unlabelled["metadata"]["labels"] = {}
    await client.create(kube.PODS, "default", unlabelled)
    informer = Informer(client, kube.PODS, "ray.io/cluster", label_selector="")
    async with running(informer):
        assert await eventually(lambda: informer.whole)
        kept = informer.get("default", "bare")
        assert kept is not None and kept["metadata"]["labels"] == {}


async def test_gone_only_when_a_whole_copy_at_the_version_lacks_that_uid() -> None:
    kept = pod("p", "c") | {"metadata": {"name": "p", "namespace": "a", "uid": "u1"}}
    informer = Informer(
        QuietApi([kept], {"a": "10"}), kube.PODS, "ray.io/cluster", namespaces=["a"]
    )  # type: ignore[arg-type]
    assert not informer.gone("a", "q", "u2", 5)  # not listed yet: it cannot tell
    async with running(informer):
        assert await eventually(lambda: informer.whole)
        assert not informer.gone("a", "p", "u1", 5)  # holds it
        assert informer.gone("a", "p", "u0", 5)  # another object under its name now
        assert informer.gone("a", "q", "u2", 10)  # existed at 10, which the copy has reached
        assert not informer.gone("a", "q", "u2", 11)  # the copy may not have seen it yet
        assert not informer.gone("a", "q", "u2", 0)  # no version known
        assert not informer.gone("b", "q", "u2", 5)  # nobody watches b
