"""Events about a CR carry a message within the Event API's limit, however it was made."""

from __future__ import annotations

from activities.events import event_object
from activities.kube.vocabulary import EventType
from activities.raycluster.contract import EventSpec
from crds.messages import EVENT_MESSAGE_LIMIT
from crds.refs import ObjectRef

REF = ObjectRef(kind="RayCluster", namespace="ns", name="demo", uid="u-1")
HUGE = "ü" * 1_000_000


def test_an_event_spec_clips_its_message_when_made() -> None:
    spec = EventSpec(type=EventType.WARNING, reason="InvalidRayClusterSpec", message=HUGE)
    assert len(spec.message.encode()) <= EVENT_MESSAGE_LIMIT
    assert spec.message.endswith("…")


def test_an_event_object_clips_a_message_made_by_an_activity() -> None:
    event = event_object(REF, EventType.WARNING, "FailedToCreatePod", HUGE, key="1")
    assert len(event["message"].encode()) <= EVENT_MESSAGE_LIMIT


def test_a_short_message_is_kept() -> None:
    event = event_object(REF, EventType.NORMAL, "Created", "created pod demo-head-abcde", "2")
    assert event["message"] == "created pod demo-head-abcde"
