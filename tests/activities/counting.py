"""Counting a `KubeClient` method's calls by resource, for tests that hold a pass to its reads."""

from __future__ import annotations

from typing import Any

import pytest

from activities.kube import client as kube
from activities.kube.client import KubeClient


class Calls:
    """Every call of `method` on `client` from now on, by resource plural; the calls still run.

    `real` is the method itself, for reads a test makes without counting them.
    """

    def __init__(self, client: KubeClient, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.resources: list[str] = []
        self.real = getattr(client, method)

        async def counted(resource: kube.Resource, *args: Any, **kwargs: Any) -> Any:
            self.resources.append(resource.plural)
            return await self.real(resource, *args, **kwargs)

        monkeypatch.setattr(client, method, counted)

    def count(self, plural: str) -> int:
        """How many calls were for `plural` (`rayclusters`)."""
        return self.resources.count(plural)
