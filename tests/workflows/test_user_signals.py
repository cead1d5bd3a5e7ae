"""What people may send as suspend, resume and rollback (`workflows.user_signals`)."""

from __future__ import annotations

import pytest

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
