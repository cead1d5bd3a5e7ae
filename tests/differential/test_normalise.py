"""The differential suite's own logic: what normalising removes, how differences are named,
and that every accepted difference has its reason in the README."""

from __future__ import annotations

from typing import Any

from tests.differential.known import BY_SAMPLE, CHOSEN, KNOWN, Known, unexplained
from tests.differential.normalise import (
    SECRET_MARK,
    Difference,
    differences,
    event_differences,
    normalise,
    same_course,
    without_secret_values,
)
from tests.differential.scenario import documents, operators_made
from tests.differential.sides import reasons_about
from tests.reference import REPO_ROOT

POD = {
    "kind": "Pod",
    "metadata": {
        "name": "c-head-x7k2b",
        "namespace": "diff-ours",
        "uid": "1234",
        "resourceVersion": "99",
        "creationTimestamp": "2026-12-02T08:38:49Z",
        "labels": {"controller-uid": "f83fdd48-cc67-4506-a5d4-82e5f768770e"},
        "ownerReferences": [{"kind": "RayCluster", "name": "c", "uid": "5678"}],
    },
    "spec": {
        "nodeName": "devcluster",
        "containers": [
            {"name": "ray-head", "env": [{"name": "A", "value": "c-head-svc.diff-ours"}]}
        ],
    },
    "status": {"podIP": "10.244.0.7", "startTime": "2026-12-02T08:38:50.5Z"},
}


def test_chance_and_the_namespace_are_taken_out() -> None:
    clean = normalise(POD, "diff-ours")

    assert clean["metadata"] == {
        "name": "c-head-?????",
        "namespace": "NS",
        "labels": {"controller-uid": "UID"},
        "ownerReferences": [{"kind": "RayCluster", "name": "c"}],
    }
    assert clean["spec"] == {
        "containers": [{"name": "ray-head", "env": [{"name": "A", "value": "c-head-svc.NS"}]}]
    }
    assert clean["status"] == {"podIP": "IP", "startTime": "TIME"}


def test_words_of_five_letters_with_vowels_are_not_taken_for_suffixes() -> None:
    assert normalise({"a": "ray-worker-group", "b": "x-bcdfg"}, "ns") == {
        "a": "ray-worker-group",
        "b": "x-?????",
    }


def test_named_lists_are_compared_by_name_and_their_order_once() -> None:
    theirs = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    ours = {"env": [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}]}

    assert [str(d) for d in differences(theirs, ours)] == [
        "/env[A]/value: KubeRay '1', ours '3'",
        "/env(order): KubeRay ['A', 'B'], ours ['B', 'A']",
    ]


def test_an_absent_map_is_an_empty_one() -> None:
    kuberay = {"metadata": {}, "annotations": {"a": "1"}}
    ours = {"annotations": None}

    assert list(differences(kuberay, ours)) == [Difference("/annotations/a", "1", None)]


def test_missing_keys_and_unnamed_lists() -> None:
    found = list(differences({"args": ["a", "b"], "x": 1}, {"args": ["a"], "y": 2}))

    assert found == [
        Difference("/args", ["a", "b"], ["a"]),
        Difference("/x", 1, None),
        Difference("/y", None, 2),
    ]


def test_a_known_pattern_matches_brackets_and_question_marks_literally() -> None:
    known = Known("/Pod/*/spec/containers[*]/args[0]", CHOSEN, "")

    assert known.explains(Difference("/Pod/c-head-?????/spec/containers[ray-head]/args[0]", 1, 2))
    assert not known.explains(
        Difference("/Pod/c-head-?????/spec/containers[ray-head]/args[1]", 1, 2)
    )
    assert unexplained([Difference("/Pod/p/metadata/generateName", "p-", None)]) == []
    assert unexplained([Difference("/Pod/p/metadata/labels/x", "1", None)]) != []


def test_every_chosen_difference_is_in_the_readme() -> None:
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    for known in (*KNOWN, *(k for knowns in BY_SAMPLE.values() for k in knowns)):
        if known.kind == CHOSEN:
            assert " ".join(known.reason.split()) in readme, known.reason


def test_a_known_check_accepts_only_the_part_that_differs() -> None:
    path = "/RayService/s/status/observedGeneration"  # KubeRay's finalizer write: one ahead

    assert not unexplained([Difference(path, 4, 3)])
    assert unexplained([Difference(path, 5, 3)])
    assert unexplained([Difference(path, 3, 4)])


def test_an_event_one_side_records_is_accepted_by_its_reason_alone() -> None:
    """Regression: the Events of a namespace were one difference, so an accepted reason of an
    earlier scenario (KubeRay's FailedToCreateRayCluster race) beside an accepted reason of
    this one (our PromotedRayCluster) was accepted by neither."""
    race = ("RayJob", "Warning", "FailedToCreateRayCluster")
    promoted = ("RayService", "Normal", "PromotedRayCluster")
    other = ("RayJob", "Normal", "Created")
    assert not unexplained(event_differences({race}, {promoted}))
    assert [d.path for d in unexplained(event_differences({race, other}, set()))] == [
        "/events/RayJob/Normal/Created"
    ]
    assert unexplained(event_differences(set(), {race}))  # ours recording the race is new
    # The same stale-cache race on a RayService's pending cluster (seen in CI).
    assert not unexplained(event_differences({("RayService", *race[1:])}, set()))
    # And on a suspended RayJob's cluster, deleted twice (seen in a full run).
    deleted_twice = ("RayJob", "Warning", "FailedToDeleteRayCluster")
    assert not unexplained(event_differences({deleted_twice}, set()))
    assert unexplained(event_differences(set(), {deleted_twice}))
    assert event_differences({other}, {other}) == []


def test_a_course_may_skip_a_state_the_other_wrote_between_polls() -> None:
    theirs = [("Initializing", ""), ("Running", "PENDING"), ("Retrying", "FAILED")]
    theirs += [("Running", "RUNNING"), ("Failed", "FAILED")]
    ours = [("Initializing", ""), ("Running", "RUNNING"), ("Retrying", "FAILED")]
    ours += [("Initializing", ""), ("Running", "PENDING"), ("Failed", "FAILED")]

    assert same_course(theirs, ours)  # a job status seen by chance; an Initializing skipped
    assert not same_course(theirs, [*ours[:-1], ("Failed", "STOPPED")])  # another end
    assert not same_course(theirs, [("Running", ""), ("Initializing", ""), ("Failed", "FAILED")])
    assert not same_course(theirs, [("Suspended", ""), ("Failed", "FAILED")])  # not theirs


def test_node_ports_the_api_server_drew_are_chance() -> None:
    """A NodePort head Service gets its ports from the API server's range on each side; the
    RayCluster's endpoints name them. Target ports stay as they are."""
    service = {"spec": {"ports": [{"name": "client", "port": 10001, "nodePort": 31114}]}}
    cluster = {"status": {"endpoints": {"client": "31114", "dashboard": "8265"}}}

    assert normalise(service, "ns")["spec"]["ports"] == [
        {"name": "client", "port": 10001, "nodePort": "NODEPORT"}
    ]
    assert normalise(cluster, "ns")["status"]["endpoints"] == {
        "client": "NODEPORT",
        "dashboard": "8265",
    }


def test_a_custom_head_services_default_ports_may_come_in_any_order() -> None:
    """KubeRay appends a custom head Service's default ports in Go's map order; its default
    head Service sorts them by name, so an order of ours that differs there is still found."""
    path = "/Service/s/spec/ports(order)"
    random = ["custom", "gcs-server", "dashboard", "client"]
    by_name = ["custom", "client", "dashboard", "gcs-server"]
    assert not unexplained([Difference(path, random, by_name)])
    assert unexplained([Difference(path, ["client", "dashboard"], ["dashboard", "client"])])


def test_what_the_operators_made_leaves_out_what_a_sample_brought() -> None:
    """A sample's Redis pod (owned by its ReplicaSet) must not hold up the end of a scenario;
    a submitter Job's pod (owned by a Job the RayJob owns) is the operator's."""

    def owned(kind: str, name: str) -> dict[str, Any]:
        return {"metadata": {"ownerReferences": [{"kind": kind, "name": name}]}}

    captured = {
        "RayJob/j": {"metadata": {}},
        "Job/j": owned("RayJob", "j"),
        "Pod/j-?????": owned("Job", "j"),
        "Pod/redis-?????": owned("ReplicaSet", "redis"),
        "Service/j-head-svc": owned("RayJob", "j"),
    }
    assert operators_made(captured) == ["Job/j", "Pod/j-?????", "RayJob/j", "Service/j-head-svc"]


def test_a_generate_named_sample_gets_one_name_for_both_sides() -> None:
    (job,) = documents("ray-job.kueue-toy-sample.yaml")
    assert job["metadata"]["name"] == "rayjob-sample-side"
    assert "generateName" not in job["metadata"]


def test_only_events_about_the_scenarios_own_objects_count() -> None:
    """Regression: KubeRay, reconciling an earlier scenario's cluster from a stale cache, recorded
    `DeletedPod` after that scenario's Events were deleted, and the next scenario (a cluster of
    the same name) counted it as a difference of its own."""

    def event(uid: str, reason: str, kind: str = "RayCluster") -> dict[str, Any]:
        return {"involvedObject": {"kind": kind, "uid": uid}, "type": "Normal", "reason": reason}

    events = [
        event("old", "DeletedPod"),
        event("new", "CreatedService"),
        event("new", "Scheduled", kind="Pod"),
    ]
    assert reasons_about(events, {"new"}) == {("RayCluster", "Normal", "CreatedService")}


def test_a_secret_is_compared_by_its_keys_never_by_what_they_hold() -> None:
    token = {"kind": "Secret", "metadata": {"name": "c"}, "data": {"auth_token": "c2VjcmV0"}}
    masked = without_secret_values(token)

    assert masked["data"] == {"auth_token": SECRET_MARK}
    assert "c2VjcmV0" not in str(masked) and token["data"]["auth_token"] == "c2VjcmV0"
    assert without_secret_values({"kind": "Pod", "data": {"x": "y"}})["data"] == {"x": "y"}


def test_generations_are_compared_as_each_write_of_a_spec_counts() -> None:
    """Each side's spec writes show in `metadata.generation`: one write more is a difference."""
    kuberay = normalise({"metadata": {"name": "c", "generation": 2, "uid": "u"}}, "ns")
    ours = normalise({"metadata": {"name": "c", "generation": 1, "uid": "v"}}, "ns")
    assert [d.path for d in differences(kuberay, ours)] == ["/metadata/generation"]
