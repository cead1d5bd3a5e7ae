"""The payload-bounds benchmark: its documents are the worst the bounds let through, or refused.

Times are the benchmark's to print, not for a test to assert: this checks what the figures
stand for. Every "accepted" document is accepted, and those built to fill the node bound hold
nearly as many keys and values as it allows; every refused one is refused in words that name
its bound; and the table has a row per document.
"""

from __future__ import annotations

import pytest

from benchmarks.payload_bounds import (
    JSON_FIELDS,
    WHOLE_CR,
    YAML_FIELDS,
    Timing,
    cr_cases,
    json_cases,
    table,
    time_case,
    yaml_cases,
)
from crds.nesting import MAX_NODES
from crds.payloads import FIELD_BOUNDS

CASES = yaml_cases() + json_cases() + cr_cases()

BOUND_WORDS = (
    "keys and values",
    "nests deeper than",
    "is larger than",
    "4,300 digits",
    "beyond 64 bits",
    "cannot read",
)


@pytest.fixture(scope="module")
def timings() -> list[Timing]:
    return [time_case(case, repeat=1) for case in CASES]


def test_every_document_is_accepted_or_refused_as_labelled(timings: list[Timing]) -> None:
    wrong = [
        (t.case.name, t.outcome) for t in timings if (t.outcome == "accepted") != t.case.accepted
    ]
    assert wrong == []


def test_the_documents_that_fill_the_node_bound_nearly_reach_it(timings: list[Timing]) -> None:
    # Those not limited by bytes first: the densest shapes of each kind.
    filled = {
        YAML_FIELDS: [
            "flow list of numbers",
            "block list of strings",
            "flow mapping, 4-letter keys",
            "empty lists",
            "empty mappings",
            "nested block mappings",
            "lists nested 64 deep",
            "aliases to one scalar",
            "an anchor on every item",
            "JSON",
        ],
        JSON_FIELDS: ["object of numbers at the bound"],
        WHOLE_CR: ["env vars across 100 worker groups", "env vars of one container", "annotations"],
    }
    bounds = {YAML_FIELDS: FIELD_BOUNDS.max_nodes, JSON_FIELDS: FIELD_BOUNDS.max_nodes}
    bounds[WHOLE_CR] = MAX_NODES
    by_name = {(t.case.group, t.case.name): t for t in timings}
    for group, names in filled.items():
        for name in names:
            nodes = by_name[group, name].nodes
            assert nodes is not None and 0.95 * bounds[group] <= nodes <= bounds[group], name


def test_refusals_name_their_bound(timings: list[Timing]) -> None:
    for timing in timings:
        if not timing.case.accepted:
            assert any(words in timing.outcome for words in BOUND_WORDS), timing.outcome


def test_the_table_has_a_row_per_document(timings: list[Timing]) -> None:
    rows = [line for line in table(timings).splitlines() if line.startswith("| ")]
    assert len(rows) == len(CASES) + 3  # and a heading per group
    assert all(case.name in table(timings) for case in CASES)


def test_case_documents_fit_the_size_bound() -> None:
    # Those meant to be accepted are within 256 KiB (the bound a test of time would hide).
    size = FIELD_BOUNDS.max_bytes or 0
    for case in CASES:
        if case.accepted and isinstance(case.document, str):
            assert len(case.document.encode()) <= size, case.name
