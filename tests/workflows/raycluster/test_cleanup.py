"""The Redis cleanup finalizer, decision by decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from workflows.raycluster.cleanup import (
    CleanupFacts,
    CleanupStep,
    cleanup_step,
    deletion_timeout,
    needs_redis_cleanup,
)

from .helpers import spec

NOW = datetime(2026, 1, 1, tzinfo=UTC)
REDIS = spec(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
ROCKSDB = spec(gcsFaultToleranceOptions={"backend": "rocksdb"})
S = CleanupStep


def facts(**fields: Any) -> CleanupFacts:
    base: dict[str, Any] = {
        "spec": REDIS,
        "annotations": {},
        "has_finalizer": True,
        "deleted_at": NOW - timedelta(seconds=10),
        "live_pods": 0,
        "head_pods": 0,
    }
    return CleanupFacts(**{**base, **fields})


@pytest.mark.parametrize(
    ("case", "step"),
    [
        pytest.param(facts(has_finalizer=False, deleted_at=None), S.ADD_FINALIZER, id="add"),
        pytest.param(facts(deleted_at=None), S.NONE, id="already-added"),
        pytest.param(facts(spec=spec(), has_finalizer=False, deleted_at=None), S.NONE, id="no-ft"),
        pytest.param(
            facts(spec=ROCKSDB, has_finalizer=False, deleted_at=None),
            S.NONE,
            id="rocksdb-needs-none",
        ),
        pytest.param(facts(spec=ROCKSDB), S.REMOVE_FINALIZER, id="rocksdb-stale-finalizer"),
        pytest.param(facts(has_finalizer=False), S.NONE, id="deleting-without-finalizer"),
        pytest.param(
            facts(enabled=False, has_finalizer=False, deleted_at=None),
            S.NONE,
            id="cleanup-off-adds-no-finalizer",
        ),
        pytest.param(
            facts(enabled=False, live_pods=3, head_pods=1),
            S.REMOVE_FINALIZER,
            id="cleanup-off-drops-a-left-over-finalizer",
        ),
        pytest.param(facts(live_pods=3, head_pods=1), S.DELETE_PODS, id="pods-first"),
        pytest.param(facts(head_pods=1), S.WAIT_FOR_HEAD, id="head-terminating"),
        pytest.param(facts(), S.CREATE_JOB, id="create-job"),
        pytest.param(facts(job_exists=True), S.WAIT_FOR_JOB, id="job-running"),
        pytest.param(
            facts(job_exists=True, job_finished="Complete"), S.REMOVE_FINALIZER, id="done"
        ),
        pytest.param(
            facts(job_exists=True, job_finished="Failed"), S.REMOVE_FINALIZER, id="failed"
        ),
        pytest.param(
            facts(deleted_at=NOW - timedelta(seconds=300), job_exists=True),
            S.FORCE_REMOVE_FINALIZER,
            id="timed-out",
        ),
        pytest.param(
            facts(
                annotations={"ray.io/gcs-ft-deletion-timeout": "5"},
                deleted_at=NOW - timedelta(seconds=6),
                live_pods=2,
            ),
            S.FORCE_REMOVE_FINALIZER,
            id="custom-timeout",
        ),
    ],
)
def test_cleanup_step(case: CleanupFacts, step: CleanupStep) -> None:
    assert cleanup_step(case, NOW).step == step


def test_waiting_steps_carry_the_deadline() -> None:
    decision = cleanup_step(facts(job_exists=True), NOW)
    assert decision.deadline == NOW - timedelta(seconds=10) + timedelta(seconds=300)


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [
        ({}, 300),
        ({"ray.io/gcs-ft-deletion-timeout": "42"}, 42),
        ({"ray.io/gcs-ft-deletion-timeout": "-1"}, 300),
        ({"ray.io/gcs-ft-deletion-timeout": "x"}, 300),
        # As KubeRay's strconv.Atoi reads it: a sign, ASCII digits, within a Go Duration.
        ({"ray.io/gcs-ft-deletion-timeout": "+42"}, 42),
        ({"ray.io/gcs-ft-deletion-timeout": "²"}, 300),
        ({"ray.io/gcs-ft-deletion-timeout": "9" * 5000}, 300),
        ({"ray.io/gcs-ft-deletion-timeout": "9223372036"}, 9223372036),
        ({"ray.io/gcs-ft-deletion-timeout": "9223372037"}, 300),
    ],
)
def test_deletion_timeout(annotations: dict[str, str], seconds: int) -> None:
    assert deletion_timeout(annotations) == timedelta(seconds=seconds)


def test_legacy_annotation_enables_redis_cleanup() -> None:
    assert needs_redis_cleanup(spec(), {"ray.io/ft-enabled": "true"})
    assert not needs_redis_cleanup(spec(), {})
