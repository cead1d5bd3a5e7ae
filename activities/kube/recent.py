"""The objects a worker read last, kept by resourceVersion for the later steps of the same pass.

A pass reads its CR, decides, then acts and writes the status, and each of those steps needs the
CR again: the acting step builds from the spec, the status write checks the uid and replaces
what is stored. Read three times a pass, the RayCluster was a third of a cluster's API requests.
The read keeps the object here and gives the workflow its resourceVersion; a later step that
names that version gets the same object back, or reads it again when it fell out. A version
names one state of one object, so the step acts on exactly what the decisions were made on;
whatever changed since is news for the next pass, as it would be had it come a moment after a
fresh read.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass

from activities.kube.client import JSON, KubeClient, Resource
from activities.kube.errors import KubeConflict, KubeNotFound
from activities.kube.patches import replacing_patch
from crds.refs import ObjectRef

SIZE = 512
"""Objects kept: more than the passes a worker runs at once, so a pass finds its own read."""

_Key = tuple[str, str, str]
"""(resource plural, namespace, name)."""


class RecentReads:
    """The last `size` objects read, each as compact JSON with its uid and resourceVersion."""

    def __init__(self, size: int = SIZE) -> None:
        self._size = size
        self._kept: OrderedDict[_Key, tuple[str, str, bytes]] = OrderedDict()

    def keep(self, resource: Resource, obj: JSON) -> str:
        """Keep `obj` (as read from the API server); returns its resourceVersion ("": not kept)."""
        meta = obj["metadata"]
        version = str(meta.get("resourceVersion") or "")
        if not version:
            return ""
        key = (resource.plural, str(meta.get("namespace") or ""), str(meta["name"]))
        try:
            data = json.dumps(obj, separators=(",", ":")).encode()
        except (TypeError, ValueError):  # decoded without its too-deep parts: read it again
            self._kept.pop(key, None)
            return ""
        self._kept[key] = (str(meta.get("uid") or ""), version, data)
        self._kept.move_to_end(key)
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return version

    def recall(
        self, resource: Resource, namespace: str, name: str, uid: str, version: str
    ) -> JSON | None:
        """The object as read at `version`, if it is still kept and is the one with `uid`."""
        key = (resource.plural, namespace, name)
        kept = self._kept.get(key)
        if not version or kept is None or kept[:2] != (uid, version):
            return None
        self._kept.move_to_end(key)
        obj: JSON = json.loads(kept[2])
        return obj

    def __len__(self) -> int:
        return len(self._kept)


@dataclass(frozen=True)
class Replaced:
    """A status replaced: the object as it was before, and its resourceVersion after (0: none)."""

    before: JSON
    version: int


async def replace_status(
    client: KubeClient,
    recent: RecentReads,
    resource: Resource,
    ref: ObjectRef,
    version: str,
    new: JSON,
) -> Replaced | None:
    """Replace the status of the object `ref` names with `new`.

    Against the pass's read (`version`), on condition that the object is still that version:
    one request. When anything wrote it since, or it was re-created under its name (a 409
    either way), or the read is not kept: against the object as it is now. None when the
    object is gone or another one.
    """
    ns, name = ref.namespace, ref.name
    current = recent.recall(resource, ns, name, ref.uid, version)
    if current is not None:
        patch = replacing_patch(current.get("status") or {}, new)
        try:
            at_version = {"metadata": {"resourceVersion": version}, "status": patch}
            written = await client.patch(resource, ns, name, at_version, sub="status")
            return Replaced(current, version_of(written))
        except KubeNotFound:
            return None
        except KubeConflict:
            pass
    current = await client.get_same(resource, ns, name, ref.uid)
    if current is None:
        return None
    patch = replacing_patch(current.get("status") or {}, new)
    try:
        written = await client.patch(resource, ns, name, {"status": patch}, sub="status")
    except KubeNotFound:  # gone since: nothing left to write
        return Replaced(current, 0)
    return Replaced(current, version_of(written))


async def patch_version(client: KubeClient, resource: Resource, ref: ObjectRef, patch: JSON) -> int:
    """Patch the object `ref` names; the version the patch left, 0 when the object is gone."""
    try:
        written = await client.patch(resource, ref.namespace, ref.name, patch)
    except KubeNotFound:  # nothing left to write
        return 0
    return version_of(written)


def version_of(obj: JSON) -> int:
    """An object's resourceVersion as a number (0 when it is none)."""
    return version_number(str((obj.get("metadata") or {}).get("resourceVersion") or ""))


def version_number(version: str) -> int:
    """A resourceVersion as a number (0 when it is none, or not a number)."""
    return int(version) if version.isdigit() else 0
