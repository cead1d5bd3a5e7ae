"""The payload encryption codec: round trip, rotation, wrong keys, tampering, plaintext."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest
from pydantic import BaseModel, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DefaultFailureConverterWithEncodedAttributes

from runtime.codec import (
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    PayloadDecryptionError,
    key_id,
    parse_keys,
)
from runtime.settings import Settings, describe_invalid
from runtime.temporal_client import data_converter

MARKER = "marker-7f3a-do-not-store-in-clear"


class Spec(BaseModel):
    name: str
    replicas: int


def new_key() -> bytes:
    return os.urandom(32)


def b64(*keys: bytes) -> str:
    return ",".join(base64.b64encode(key).decode() for key in keys)


async def encrypted(codec: EncryptionCodec, value: object) -> Payload:
    (plain,) = pydantic_data_converter.payload_converter.to_payloads([value])
    (sealed,) = await codec.encode([plain])
    return sealed


async def test_round_trip_hides_the_value_and_restores_the_payload() -> None:
    codec = EncryptionCodec([new_key()])
    spec = Spec(name=MARKER, replicas=3)
    (plain,) = pydantic_data_converter.payload_converter.to_payloads([spec])
    (sealed,) = await codec.encode([plain])

    assert MARKER.encode() not in sealed.SerializeToString()
    assert sealed.metadata["encoding"] == ENCODING
    assert sealed.metadata[KEY_ID] == codec.current_key_id.encode()
    (opened,) = await codec.decode([sealed])
    assert opened == plain
    (value,) = pydantic_data_converter.payload_converter.from_payloads([opened], [Spec])
    assert value == spec


async def test_the_same_value_encrypts_differently_each_time() -> None:
    codec = EncryptionCodec([new_key()])
    first, second = await encrypted(codec, MARKER), await encrypted(codec, MARKER)
    assert first.data != second.data  # a fresh nonce per payload


async def test_a_codec_without_the_key_fails_clearly_naming_the_key_id() -> None:
    writer, reader = EncryptionCodec([new_key()]), EncryptionCodec([new_key()])
    sealed = await encrypted(writer, MARKER)

    with pytest.raises(PayloadDecryptionError) as caught:
        await reader.decode([sealed])
    message = str(caught.value)
    assert writer.current_key_id in message and "KUBERAY_TEMPORAL_PAYLOAD_KEY" in message


async def test_a_forged_key_id_with_the_wrong_key_fails_authentication() -> None:
    writer, reader = EncryptionCodec([new_key()]), EncryptionCodec([new_key()])
    sealed = await encrypted(writer, MARKER)
    sealed.metadata[KEY_ID] = reader.current_key_id.encode()

    with pytest.raises(PayloadDecryptionError, match="fails authentication"):
        await reader.decode([sealed])


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda data: data[:-1] + bytes([data[-1] ^ 1]), id="flipped-tag-bit"),
        pytest.param(lambda data: data[:20] + bytes([data[20] ^ 1]) + data[21:], id="flipped-body"),
        pytest.param(lambda data: data[:12], id="truncated-to-nonce"),
        pytest.param(lambda data: data[:5], id="shorter-than-a-nonce"),
    ],
)
async def test_a_tampered_payload_fails_authentication(tamper: object) -> None:
    codec = EncryptionCodec([new_key()])
    sealed = await encrypted(codec, MARKER)
    assert callable(tamper)
    sealed.data = tamper(sealed.data)

    with pytest.raises(PayloadDecryptionError, match="fails authentication"):
        await codec.decode([sealed])


async def test_plaintext_payloads_pass_through_decode() -> None:
    """Histories written before the key was set must stay readable (documented choice)."""
    codec = EncryptionCodec([new_key()])
    (plain,) = pydantic_data_converter.payload_converter.to_payloads([Spec(name="a", replicas=1)])

    assert await codec.decode([plain]) == [plain]


async def test_rotation_the_first_key_encrypts_every_key_decrypts() -> None:
    old, new = new_key(), new_key()
    before = await encrypted(EncryptionCodec([old]), "written with the old key")
    rotated = EncryptionCodec([new, old])

    (opened,) = await rotated.decode([before])
    assert pydantic_data_converter.payload_converter.from_payloads([opened]) == [
        "written with the old key"
    ]
    after = await encrypted(rotated, "written after rotation")
    assert after.metadata[KEY_ID] == key_id(new).encode()


def test_parse_keys_accepts_one_or_several() -> None:
    first, second = new_key(), new_key()
    assert parse_keys(b64(first)) == [first]
    assert parse_keys(f" {b64(first)} , {b64(second)} ") == [first, second]


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        pytest.param(base64.b64encode(b"sixteen-byte-key").decode(), "16 bytes", id="short"),
        pytest.param("not*base64*at*all=" * 3, "not base64", id="not-base64"),
        pytest.param("", "is empty", id="empty"),
        pytest.param(b64(b"k" * 32) + ",???", "key 2 of 2 is not base64", id="second-bad"),
        pytest.param(b64(b"k" * 32, b"k" * 32), "given twice", id="duplicate"),
    ],
)
def test_a_malformed_key_fails_at_start_naming_the_variable_not_the_value(
    value: str, phrase: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": value})
    message = describe_invalid(caught.value)
    assert message.startswith("KUBERAY_TEMPORAL_PAYLOAD_KEY=<hidden>: ") and phrase in message
    for shown in (message, str(caught.value), repr(caught.value)):
        assert not value or value not in shown


def test_the_key_never_shows_in_the_settings() -> None:
    value = b64(new_key())
    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": value})
    assert value not in repr(settings) + str(settings) + settings.model_dump_json()


def test_the_converter_encrypts_only_with_a_key() -> None:
    assert data_converter(Settings()) is pydantic_data_converter
    settings = Settings.from_env({"KUBERAY_TEMPORAL_PAYLOAD_KEY": b64(new_key())})
    converter = data_converter(settings)
    assert isinstance(converter.payload_codec, EncryptionCodec)
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    # Failure messages and stack traces go into the (encrypted) payloads too.
    assert isinstance(converter.failure_converter, DefaultFailureConverterWithEncodedAttributes)


@pytest.mark.parametrize(
    "command",
    [("worker",), ("bridge",), ("status", "RayCluster/default/x"), ("ls",)],
    ids=["worker", "bridge", "status", "ls"],
)
def test_every_command_refuses_a_malformed_key_at_start(command: tuple[str, ...]) -> None:
    """Exit 2 with one line naming the variable, before connecting to anything."""
    value = base64.b64encode(b"twenty-byte-secret!!").decode()
    done = subprocess.run(
        [sys.executable, "-m", "kuberay_temporal", *command],
        env={
            **os.environ,
            "KUBERAY_TEMPORAL_PAYLOAD_KEY": value,
            "TEMPORAL_ADDRESS": "127.0.0.1:1",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "KUBERAY_TEMPORAL_PAYLOAD_KEY=<hidden>: the key decodes to 20 bytes" in done.stderr
    assert value not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
