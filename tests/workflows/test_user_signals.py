"""What people may send as suspend, resume and rollback (`workflows.user_signals`)."""

from __future__ import annotations

import pytest
from temporalio.service import RPCError, RPCStatusCode

from tests.workflows.harness import signal_current_run
from workflows.messages import UserRequest
from workflows.user_signals import read_request


@pytest.mark.parametrize(
    ("inputs", "request_"),
    [
        pytest.param((), UserRequest(), id="no-input"),
        pytest.param((None,), UserRequest(), id="null"),
        pytest.param(({},), UserRequest(), id="empty-object"),
        pytest.param(({"reason": "r"},), UserRequest(reason="r"), id="reason"),
        pytest.param(
            ({"reason": "r", "requested_by": "me"},),
            UserRequest(reason="r", requested_by="me"),
            id="documented-fields",
        ),
    ],
)
def test_accepted_inputs(inputs: tuple[object, ...], request_: UserRequest) -> None:
    assert read_request(inputs) == request_


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        pytest.param(("s3cret",), "got a string", id="string"),
        pytest.param((5,), "got a number", id="number"),
        pytest.param(([{"reason": "r"}],), "got a list", id="list"),
        pytest.param(({"reason": 5},), "reason: Input should be a valid string", id="wrong-type"),
        pytest.param(({"reson": "r"},), "reson: Extra inputs are not permitted", id="typo"),
        pytest.param(({}, {}), "expected at most one input, got 2", id="two-inputs"),
    ],
)
def test_refused_inputs_say_why_without_quoting_them(inputs: tuple[object, ...], says: str) -> None:
    problem = read_request(inputs)
    assert isinstance(problem, str)
    assert says in problem
    assert "s3cret" not in problem


class _ClosingRun:
    """A handle whose first signal reaches a run that just continued as new."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, list[object]]] = []
        self.refusals = 1

    async def signal(self, name: str, *, args: list[object]) -> None:
        if self.refusals:
            self.refusals -= 1
            raise RPCError("Completed workflow", RPCStatusCode.NOT_FOUND, b"")
        self.sent.append((name, args))


async def test_a_signal_racing_continue_as_new_reaches_the_new_run() -> None:
    # The time-skipping server refuses a signal that meets a run as it continues as new;
    # tests that make workflows continue as new flaked on it.
    handle = _ClosingRun()
    await signal_current_run(handle, "owned_changed", [{}])  # type: ignore[arg-type]
    assert handle.sent == [("owned_changed", [{}])]
