"""Merge patches that replace: a status written whole, with nothing left of the one before."""

from __future__ import annotations

from activities.kube.client import JSON


def replacing_patch(old: JSON, new: JSON) -> JSON:
    """A merge patch that turns `old` into `new`: keys `new` lacks are nulled, at every depth.

    A plain merge patch keeps nested keys it does not mention, so a cleared
    `pendingServiceStatus` would keep the last pending cluster's applications, and a
    suspended cluster's `head` the address of a pod that is gone.
    """
    patch: JSON = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            patch[key] = replacing_patch(before, value)
        else:
            patch[key] = value
    return patch
