"""Delivering batches: what the signaller refuses before it asks Temporal anything."""

from __future__ import annotations

import logging
from typing import cast

import pytest
from temporalio.client import Client

from bridge.filtering import Nudge
from bridge.queueing import Batch
from bridge.signalling import Signaller
from crds.refs import ObjectRef
from workflows import messages


async def test_a_kind_without_a_workflow_is_dropped_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Raised, it would go back to the coalescer and be retried forever."""
    ref = ObjectRef(kind="RayFoo", namespace="ns", name="c", uid="u1")
    batch = Batch(ref)
    batch.merge(Nudge(ref, messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"])))
    signaller = Signaller(cast(Client, object()), "q")  # any call to Temporal would raise
    await signaller.deliver(batch)
    assert (signaller.sent, signaller.refused) == (0, 1)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "no workflow for kind RayFoo; dropping owned_changed for rayfoo/ns/c/u1"
    ]
