"""The API server's Status bodies, read into our errors."""

from __future__ import annotations

import json

from activities.kube import errors


def test_a_refusal_keeps_the_reasons_of_its_causes() -> None:
    body = {
        "kind": "Status",
        "status": "Failure",
        "reason": "Forbidden",
        "message": 'jobs.batch "x" is forbidden: unable to create new content in namespace n',
        "details": {"causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}]},
        "code": 403,
    }
    err = errors.from_status(403, json.dumps(body))
    assert isinstance(err, errors.KubeForbidden)
    assert err.causes == (errors.NAMESPACE_TERMINATING,)


def test_odd_causes_are_left_out() -> None:
    for details in ({"causes": "none"}, {"causes": [1, {"field": "x"}]}, "text", None):
        body = json.dumps({"reason": "Invalid", "message": "m", "details": details})
        assert errors.from_status(422, body).causes == ()
    assert errors.from_status(500, b"<html>").causes == ()
