"""Opt-in whole sets: tests marked `full_set` run only when their folder's variable says `all`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def deselect_unless_asked(
    config: pytest.Config, items: list[pytest.Item], folder: Path, variable: str
) -> None:
    """Deselect `folder`'s `full_set` tests unless `variable` is `all` (pytest counts them).

    For a conftest's `pytest_collection_modifyitems`, which sees the whole session's items:
    it decides for its own folder's only.
    """
    if os.environ.get(variable) == "all":
        return
    dropped = [
        item
        for item in items
        if item.get_closest_marker("full_set") and item.path.is_relative_to(folder)
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
