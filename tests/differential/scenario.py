"""One CR applied to both sides, driven to the same end, and what parts: a `Comparison`."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.differential.known import Known, unexplained
from tests.differential.normalise import (
    Difference,
    differences,
    event_differences,
    same_course,
)
from tests.differential.sides import (
    KUBERAY,
    OURS,
    RAY_KINDS,
    SIDES,
    Recorder,
    capture,
    event_reasons,
)
from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

Status = dict[str, Any]


def documents(name: str) -> list[dict[str, Any]]:
    """Every document of KubeRay's sample `name`, in the file's order.

    A document named by `generateName` gets a name of that shape, the same on both sides, so
    the two can be followed and compared by name.
    """
    docs = [dict(d) for d in yaml.safe_load_all((KUBERAY_SAMPLES / name).read_text()) if d]
    for doc in docs:
        meta = doc.get("metadata") or {}
        if "name" not in meta and "generateName" in meta:
            doc["metadata"] = {**meta, "name": meta["generateName"] + "side"}
            del doc["metadata"]["generateName"]
    return docs


Body = dict[str, Any] | list[dict[str, Any]]
Patch = Body | Callable[[str], Body]


@dataclass
class SideBySide:
    """Both namespaces of one scenario, each followed by a `Recorder` from before the apply."""

    stack: LocalStack
    recorders: dict[str, Recorder] = field(default_factory=dict)
    also: tuple[str, ...] = ()
    """Kinds captured besides `CHILD_KINDS` (a batch scheduler's PodGroups)."""

    async def apply(self, doc: dict[str, Any]) -> None:
        """Apply `doc` in both namespaces (its own namespace, if any, is replaced)."""
        for namespace in SIDES:
            placed = copy.deepcopy(doc)
            placed["metadata"]["namespace"] = namespace
            path = self.stack.state_dir.parent / f"{namespace}-{doc['metadata']['name']}.yaml"
            path.write_text(yaml.safe_dump(placed))
            await self.stack.kubectl("apply", "-f", str(path))

    async def patch(self, kind: str, name: str, patch: Patch) -> None:
        """Patch the object in both namespaces: a merge patch (a dict) or a JSON patch (a list).

        A callable is given the namespace and returns the patch, for one that names objects
        of that side (a pod to delete).
        """
        for namespace in SIDES:
            body = patch(namespace) if callable(patch) else patch
            style = "json" if isinstance(body, list) else "merge"
            await self.stack.kubectl(
                "patch", kind, name, "-n", namespace, "--type", style, "-p", json.dumps(body)
            )

    async def pods(self, namespace: str, selector: str) -> list[str]:
        """Names of the pods matching `selector` that are not being deleted."""
        raw = await self.stack.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json")
        return sorted(
            p["metadata"]["name"]
            for p in json.loads(raw)["items"]
            if not p["metadata"].get("deletionTimestamp")
        )

    async def status(self, namespace: str, kind: str, name: str) -> Status:
        raw = await self.stack.kubectl(
            "get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found"
        )
        return dict(json.loads(raw).get("status") or {}) if raw.strip() else {}

    async def reach(
        self,
        kind: str,
        name: str,
        done: Callable[[Status], bool],
        what: str,
        within: float = 120,
    ) -> None:
        """Wait until the object's status satisfies `done` on both sides."""
        for namespace in SIDES:

            async def reached(namespace: str = namespace) -> bool:
                return done(await self.status(namespace, kind, name))

            await eventually(reached, within=within, message=f"{namespace}: {kind} {name} {what}")

    async def settle(self, check: Callable[[], Awaitable[bool]], what: str) -> None:
        await eventually(check, within=120, message=what)

    async def compare(self, kind: str, name: str) -> list[Difference]:
        """What parts the sides now: objects, the status trajectory, Event reasons."""
        theirs = await capture(self.stack, KUBERAY, self.also)
        ours = await capture(self.stack, OURS, self.also)
        found = list(differences(theirs, ours))
        kuberay, mine = self.recorders[KUBERAY], self.recorders[OURS]
        if not same_course(kuberay.states(kind, name), mine.states(kind, name)):
            found.append(
                Difference(
                    f"/trajectory/{kind}/{name}/states",
                    kuberay.states(kind, name),
                    mine.states(kind, name),
                )
            )
        theirs_events = await event_reasons(self.stack, KUBERAY, kuberay.uids)
        our_events = await event_reasons(self.stack, OURS, mine.uids)
        found.extend(event_differences(theirs_events, our_events))
        return found

    async def unexplained(self, kind: str, name: str, *also: Known) -> list[str]:
        """The differences neither `KNOWN` nor `also` accepts, one line each (empty: the same)."""
        return [str(d) for d in unexplained(await self.compare(kind, name), also)]

    async def delete(self, kind: str, name: str) -> None:
        """Delete the object on both sides and wait until everything it owned is gone."""
        for namespace in SIDES:
            await self.stack.kubectl(
                "delete", kind, name, "-n", namespace, "--ignore-not-found", "--wait=false"
            )
        await emptied(self.stack, self.also)


async def emptied(stack: LocalStack, also: tuple[str, ...] = ()) -> None:
    """Wait until neither side holds a ray.io object or anything an operator made (of
    `CHILD_KINDS` and `also`)."""
    left: dict[str, list[str]] = {}
    for namespace in SIDES:

        async def empty(namespace: str = namespace) -> bool:
            left[namespace] = operators_made(await capture(stack, namespace, also))
            return not left[namespace]

        try:
            await eventually(empty, within=120, message=f"{namespace} emptied")
        except AssertionError as err:  # say what stayed: the next scenario would see it
            raise AssertionError(f"{err}; left: {', '.join(left[namespace])}") from None


def operators_made(captured: dict[str, Any]) -> list[str]:
    """The keys of a capture that are ray.io objects or made for one (owned by one, or by a
    Job that is): not what a sample brought along (its Redis Deployment's pods)."""

    def owners(key: str) -> list[dict[str, Any]]:
        objs = captured[key] if isinstance(captured[key], list) else [captured[key]]
        return [ref for obj in objs for ref in obj["metadata"].get("ownerReferences") or []]

    ray = {key for key in captured if key.split("/")[0] in RAY_KINDS}
    made = ray | {key for key in captured if any(r["kind"] in RAY_KINDS for r in owners(key))}
    made |= {
        key
        for key in captured
        if any(r["kind"] == "Job" and f"Job/{r['name']}" in made for r in owners(key))
    }
    return sorted(made)


@asynccontextmanager
async def side_by_side(stack: LocalStack, also: tuple[str, ...] = ()) -> AsyncIterator[SideBySide]:
    """Both sides recorded from now until the block ends; `also` kinds captured too."""
    scenario = SideBySide(stack, also=also)
    async with AsyncExitStack() as running:
        for namespace in SIDES:
            recorder = Recorder(stack, namespace)
            scenario.recorders[namespace] = await running.enter_async_context(recorder.running())
        try:
            yield scenario
        finally:
            # Whatever a failed scenario left must not become the next one's difference.
            for namespace in SIDES:
                await stack.kubectl(
                    "delete",
                    "rayclusters,rayjobs,rayservices",
                    "--all",
                    "-n",
                    namespace,
                    "--wait=false",
                )
            await emptied(stack, also)
            # And its Events (a later scenario would count them as its own).
            for namespace in SIDES:
                await stack.kubectl("delete", "events", "--all", "-n", namespace)
