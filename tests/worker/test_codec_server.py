"""The codec server speaks Temporal's remote codec protocol with the worker's keys.

Requests are sent over HTTP to the server listening on loopback, in the protobuf JSON form the
Temporal UI and the `temporal` CLI send; `test_encrypted_history.py` has the `temporal` CLI
itself read an encrypted history through it.
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from kuberay_temporal.cli import main
from worker.codec import ENCODING, EncryptionCodec
from worker.codec_server import serving_codec

UI = "http://localhost:8233"
KEY = os.urandom(32)


@pytest_asyncio.fixture
async def url() -> AsyncIterator[str]:
    async with serving_codec(EncryptionCodec([KEY]), [UI], 0) as port:
        yield f"http://127.0.0.1:{port}"


def as_json(payloads: list[Payload]) -> dict[str, Any]:
    return json_format.MessageToDict(Payloads(payloads=payloads))


def from_json(body: dict[str, Any]) -> list[Payload]:
    return list(json_format.ParseDict(body, Payloads()).payloads)


async def post(
    url: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as response,
    ):
        return response.status, await response.json(), dict(response.headers)


PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=b'{"image": "rayproject/ray:2.46"}')


async def test_decode_opens_what_the_worker_encrypted(url: str) -> None:
    sealed = await EncryptionCodec([KEY]).encode([PLAIN, PLAIN])
    assert all(p.metadata["encoding"] == ENCODING for p in sealed)

    status, body, _ = await post(f"{url}/decode", as_json(sealed))

    assert status == 200
    assert from_json(body) == [PLAIN, PLAIN]


async def test_encode_then_decode_round_trips_and_plaintext_passes_through(url: str) -> None:
    status, sealed, _ = await post(f"{url}/encode", as_json([PLAIN]))
    assert status == 200
    [encrypted] = from_json(sealed)
    assert encrypted.metadata["encoding"] == ENCODING and b"rayproject" not in encrypted.data
    assert await EncryptionCodec([KEY]).decode([encrypted]) == [PLAIN]

    status, body, _ = await post(f"{url}/decode", as_json([PLAIN]))
    assert (status, from_json(body)) == (200, [PLAIN])


async def test_a_payload_of_another_key_is_refused_by_key_id_only(url: str) -> None:
    other = os.urandom(32)
    sealed = await EncryptionCodec([other]).encode([PLAIN])

    status, body, _ = await post(f"{url}/decode", as_json(sealed))

    assert status == 400
    assert "not among the keys" in body["message"]
    assert EncryptionCodec([other]).current_key_id in body["message"]
    for secret in (KEY, other):
        assert base64.b64encode(secret).decode() not in body["message"]
    assert "rayproject" not in body["message"]


async def test_a_body_that_is_not_payloads_is_a_400(url: str) -> None:
    status, body, _ = await post(f"{url}/decode", {"payloads": [{"data": "%%% not base64"}]})
    assert status == 400 and "protobuf JSON" in body["message"]


async def test_the_ui_origin_may_call_from_a_browser_and_no_other(url: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.options(
            f"{url}/decode",
            headers={
                "Origin": UI,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,x-namespace",
            },
        ) as preflight,
    ):
        assert preflight.status == 200
        assert preflight.headers["Access-Control-Allow-Origin"] == UI
        assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
        assert "X-Namespace" in preflight.headers["Access-Control-Allow-Headers"]

    sealed = as_json(await EncryptionCodec([KEY]).encode([PLAIN]))
    status, body, headers = await post(
        f"{url}/decode", sealed, {"Origin": UI, "X-Namespace": "default"}
    )
    assert (status, from_json(body)) == (200, [PLAIN])
    assert headers["Access-Control-Allow-Origin"] == UI

    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/decode", json=sealed, headers={"Origin": "https://elsewhere.example"}
        ) as response,
    ):
        assert response.status == 403
        assert "rayproject" not in await response.text()
        assert "Access-Control-Allow-Origin" not in response.headers


@pytest.mark.parametrize(
    ("value", "phrase"),
    [(None, "is not set"), ("c2hvcnQ=", "decodes to 5 bytes")],
)
def test_the_command_refuses_a_missing_or_bad_key(
    value: str | None,
    phrase: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if value is None:
        monkeypatch.delenv("KUBERAY_TEMPORAL_PAYLOAD_KEY", raising=False)
    else:
        monkeypatch.setenv("KUBERAY_TEMPORAL_PAYLOAD_KEY", value)

    assert main(["codec-server", "--port", "0"]) == 2

    err = capsys.readouterr().err
    assert "KUBERAY_TEMPORAL_PAYLOAD_KEY" in err and phrase in err
    assert value is None or value not in err
