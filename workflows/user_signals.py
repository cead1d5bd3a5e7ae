"""What a person sends as `suspend`, `resume` or `rollback`, and how a bad one is refused.

People send these from the Temporal UI's "Send a Signal", `temporal workflow signal` or our
CLI. The first two send no input unless one is typed, and they send whatever is typed. A
handler declared with a `UserRequest` parameter fails its workflow task on every retry when
there is no input (a missing argument), and the SDK silently drops input that does not decode,
so the handlers take the raw inputs and `read_request` decides: nothing, `null` and `{}` are
an empty request, an object with the documented fields is that request, and anything else is
refused with a reason that `refuse` puts in a Warning Event on the CR and in the worker's log.
The workflow goes on either way.
"""

from __future__ import annotations

from pydantic import ValidationError
from temporalio import workflow

from workflows.activity_calls import EVENT, execute
from workflows.messages import UserRequest

with workflow.unsafe.imports_passed_through():
    from activities.kube.vocabulary import EventType
    from activities.raycluster import contract
    from crds.refs import ObjectRef

INVALID_SIGNAL = "InvalidSignal"
"""The reason of the Warning Event a refused signal leaves on its CR."""
_EXAMPLE = '{"reason": "why", "requested_by": "who"}'


def read_request(inputs: tuple[object, ...]) -> UserRequest | str:
    """The request in a signal's inputs, or why they are not one (never quoting them)."""
    if len(inputs) > 1:
        return f"expected at most one input, got {len(inputs)}"
    value = inputs[0] if inputs else None
    if value is None:
        return UserRequest()
    if not isinstance(value, dict):
        return (
            f"the input must be empty, {{}} or an object such as {_EXAMPLE}, got a {_kind(value)}"
        )
    try:
        return UserRequest.model_validate(value)
    except ValidationError as err:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in err.errors()]
        return "; ".join(problems)


async def accepted(ref: ObjectRef, name: str, inputs: tuple[object, ...]) -> UserRequest | None:
    """The request, or None after refusing it visibly (a Warning Event and a log line)."""
    request = read_request(inputs)
    if isinstance(request, UserRequest):
        return request
    message = f"signal {name} refused: {request}; send no input, {{}} or {_EXAMPLE}"
    workflow.logger.warning(message)
    event = contract.EventSpec(type=EventType.WARNING, reason=INVALID_SIGNAL, message=message)
    await execute(
        contract.RECORD_EVENT,
        contract.RecordEventInput(ref=ref, event=event),
        summary=f"record Event {INVALID_SIGNAL}",
        policy=EVENT,
    )
    return None


def _kind(value: object) -> str:
    return {str: "string", int: "number", float: "number", bool: "boolean", list: "list"}.get(
        type(value), type(value).__name__
    )
