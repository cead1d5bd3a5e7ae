"""The codec server speaks Temporal's remote codec protocol with the worker's keys.

Requests are sent over HTTP to the server listening on loopback, in the protobuf JSON form the
Temporal UI and the `temporal` CLI send; `test_encrypted_history.py` has the `temporal` CLI
itself read an encrypted history through it.
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from kuberay_temporal.cli import main
from runtime.codec import ENCODING, EncryptionCodec
from worker.codec_server import TOKEN_VARIABLE, exposure_problem, serving_codec, token_from

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


TOKEN = "codec-token-" + os.urandom(8).hex()


@pytest_asyncio.fixture
async def guarded() -> AsyncIterator[str]:
    async with serving_codec(EncryptionCodec([KEY]), [UI], 0, token=TOKEN) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer", f"{TOKEN}"],
)
async def test_with_a_token_other_callers_get_a_401_that_echoes_nothing(
    guarded: str, authorization: str | None
) -> None:
    sealed = as_json(await EncryptionCodec([KEY]).encode([PLAIN]))
    headers = {} if authorization is None else {"Authorization": authorization}
    for path in ("/decode", "/encode"):
        status, body, response_headers = await post(f"{guarded}{path}", sealed, headers)
        assert status == 401 and response_headers["WWW-Authenticate"].startswith("Bearer")
        assert TOKEN not in str(body) and "wrong-token" not in str(body)
        assert "rayproject" not in str(body)


async def test_with_a_token_the_right_bearer_decodes(guarded: str) -> None:
    sealed = as_json(await EncryptionCodec([KEY]).encode([PLAIN]))
    for scheme in ("Bearer", "bearer"):
        headers = {"Authorization": f"{scheme} {TOKEN}"}
        status, body, _ = await post(f"{guarded}/decode", sealed, headers)
        assert (status, from_json(body)) == (200, [PLAIN])


async def test_a_browser_preflight_needs_no_token_but_the_request_does(guarded: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.options(
            f"{guarded}/decode",
            headers={"Origin": UI, "Access-Control-Request-Method": "POST"},
        ) as preflight,
    ):
        assert preflight.status == 200
        assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
    sealed = as_json(await EncryptionCodec([KEY]).encode([PLAIN]))
    status, _, headers = await post(f"{guarded}/decode", sealed, {"Origin": UI})
    # The UI's page can read the refusal (CORS headers) and say why it shows ciphertext.
    assert status == 401 and headers["Access-Control-Allow-Origin"] == UI


def test_the_token_comes_from_the_variable_or_a_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"{TOKEN}\n")
    assert token_from({}, None) is None
    assert token_from({TOKEN_VARIABLE: TOKEN}, None) == TOKEN
    assert token_from({}, path) == TOKEN


@pytest.mark.parametrize(
    ("environ", "file_text", "phrase"),
    [
        ({TOKEN_VARIABLE: TOKEN}, TOKEN, "not both"),
        ({TOKEN_VARIABLE: "  "}, None, "is empty"),
        ({}, "\n", "is empty"),
        ({TOKEN_VARIABLE: f"{TOKEN} {TOKEN}"}, None, "whitespace"),
        ({}, "<missing>", "cannot read it"),
    ],
)
def test_a_bad_token_source_is_refused_without_showing_the_token(
    tmp_path: Path, environ: dict[str, str], file_text: str | None, phrase: str
) -> None:
    path: Path | None = None
    if file_text is not None:
        path = tmp_path / "token"
        if file_text != "<missing>":
            path.write_text(file_text)
    with pytest.raises(ValueError, match=phrase) as failure:
        token_from(environ, path)
    assert TOKEN not in str(failure.value)


@pytest.mark.parametrize(
    ("host", "token", "insecure", "refused"),
    [
        ("127.0.0.1", None, False, False),
        ("::1", None, False, False),
        ("localhost", None, False, False),
        ("0.0.0.0", None, False, True),
        ("::", None, False, True),
        ("", None, False, True),
        ("codec.example", None, False, True),
        ("0.0.0.0", TOKEN, False, False),
        ("0.0.0.0", None, True, False),
    ],
)
def test_only_loopback_is_served_without_a_token_unless_insecure_is_explicit(
    host: str, token: str | None, insecure: bool, refused: bool
) -> None:
    problem = exposure_problem(host, token, insecure=insecure)
    assert (problem is not None) is refused
    assert problem is None or TOKEN_VARIABLE in problem


def test_the_command_refuses_an_open_non_loopback_host(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBERAY_TEMPORAL_PAYLOAD_KEY", base64.b64encode(KEY).decode())
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)

    assert main(["codec-server", "--host", "0.0.0.0", "--port", "0"]) == 2

    err = capsys.readouterr().err
    assert "--insecure-no-token" in err and TOKEN_VARIABLE in err
