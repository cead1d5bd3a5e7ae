"""The screenshot script's pure parts; the script itself needs Chromium and is not run here."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote, urlsplit

from crds.rayjob import RayJob
from docs.screenshots import (
    FINISHING,
    LASTING,
    LIST_COLUMNS,
    LIST_QUERY,
    history_url,
    list_url,
    manifest,
    table_columns,
)

UI = "http://127.0.0.1:8233"


def test_list_url_carries_the_query_intact() -> None:
    url = urlsplit(list_url(UI, LIST_QUERY))
    assert url.path == "/namespaces/default/workflows"
    assert parse_qs(url.query) == {"query": [LIST_QUERY]}
    assert " " not in url.query and '"' not in url.query


def test_history_url_encodes_the_slashes_of_a_workflow_id() -> None:
    url = history_url(UI, "rayjob/default/sum-of-squares/6f1c", "run-1")
    assert url == (
        f"{UI}/namespaces/default/workflows/rayjob%2Fdefault%2Fsum-of-squares%2F6f1c/run-1/history"
    )
    assert unquote(url.split("/")[6]) == "rayjob/default/sum-of-squares/6f1c"


def test_table_columns_add_ray_state_and_keep_two_pinned() -> None:
    stored = json.loads(table_columns(LIST_COLUMNS))
    assert [c["label"] for c in stored["default"]] == list(LIST_COLUMNS)
    assert "RayState" in LIST_COLUMNS
    assert [c["pinned"] for c in stored["default"]][:3] == [True, True, False]


def test_manifests_are_valid_head_only_rayjobs_in_their_states() -> None:
    jobs = FINISHING + LASTING
    assert {job.state for job in jobs} == {"Complete", "Failed", "Running", "Suspended"}
    for job in jobs:
        doc = manifest(job)
        parsed = RayJob.model_validate(doc)
        assert parsed.metadata.name == job.name
        assert "workerGroupSpecs" not in doc["spec"]["rayClusterSpec"]
    assert manifest(LASTING[1])["spec"]["suspend"] is True
