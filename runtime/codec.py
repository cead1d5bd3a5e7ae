"""Optional encryption of every Temporal payload (AES-256-GCM), shared by all our clients.

Workflow histories hold the CRs' specs, statuses and decisions; with a key set, the Temporal
server (and anyone reading its database or its UI without the key) sees only ciphertext.
Search attributes (RayKind, RayNamespace, RayName, RayState) stay readable: visibility
queries need them.

Format of an encrypted payload: metadata `encoding: binary/encrypted` and
`encryption-key-id: <id>`; data is a 12-byte random nonce followed by the AES-GCM ciphertext
of the original payload's protobuf bytes, authenticated together with the key id.

Rotation: the variable holds one or more keys separated by commas. The first encrypts, every
one decrypts, found by the key id in the payload; a key can be dropped once no open history
and no retained closed one uses it.

Payloads without the `binary/encrypted` encoding pass through `decode` unchanged, so turning
encryption on for an existing install keeps the histories written before readable (running
workflows replay their plaintext start). Turning it off again leaves encrypted histories
unreadable until the key is back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

PAYLOAD_KEY_VARIABLE: Final = "KUBERAY_TEMPORAL_PAYLOAD_KEY"
ENCODING: Final = b"binary/encrypted"
KEY_ID: Final = "encryption-key-id"
KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12


class PayloadDecryptionError(Exception):
    """An encrypted payload that none of our keys opens; the message names the key id only."""


def parse_keys(text: str) -> list[bytes]:
    """The AES-256 keys in a `KUBERAY_TEMPORAL_PAYLOAD_KEY` value, the encrypting one first.

    Args:
        text: Base64 keys of 32 bytes each, separated by commas.

    Returns:
        The raw keys, in the order given.

    Raises:
        ValueError: A key is not base64 or not 32 bytes, or one is given twice. The message
            says which (by position) and never contains any part of the value.
    """
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise ValueError("is empty: unset it to turn payload encryption off")
    keys: list[bytes] = []
    for position, part in enumerate(parts, start=1):
        label = f"key {position} of {len(parts)}" if len(parts) > 1 else "the key"
        try:
            key = base64.b64decode(part, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(
                f"{label} is not base64 (make one with `openssl rand -base64 32`)"
            ) from None
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"{label} decodes to {len(key)} bytes; AES-256 needs {KEY_BYTES} "
                "(make one with `openssl rand -base64 32`)"
            )
        if key in keys:
            raise ValueError(f"{label} is given twice")
        keys.append(key)
    return keys


def key_id(key: bytes) -> str:
    """A short public name of a key: a truncated hash, which reveals nothing usable about it."""
    return hashlib.sha256(b"kuberay-temporal payload key id\0" + key).hexdigest()[:16]


class EncryptionCodec(PayloadCodec):
    """Encrypts payloads with the first key; decrypts with whichever key the payload names."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("EncryptionCodec needs at least one key")
        self._ciphers = {key_id(key): AESGCM(key) for key in keys}
        self._current = key_id(keys[0])

    @property
    def current_key_id(self) -> str:
        """The id written into every payload this codec encrypts."""
        return self._current

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload with the current key."""
        return [self._encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload; plaintext ones are returned as they are.

        Raises:
            PayloadDecryptionError: A payload names a key we do not have, or fails
                authentication (tampered with, or truncated).
        """
        return [self._decrypt(payload) for payload in payloads]

    def _encrypt(self, payload: Payload) -> Payload:
        nonce = os.urandom(_NONCE_BYTES)
        aad = self._current.encode()
        sealed = self._ciphers[self._current].encrypt(nonce, payload.SerializeToString(), aad)
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID: aad},
            data=nonce + sealed,
        )

    def _decrypt(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        kid = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._ciphers.get(kid)
        if cipher is None:
            raise PayloadDecryptionError(
                f"payload encrypted with key id {kid!r}, which is not among the keys in "
                f"{PAYLOAD_KEY_VARIABLE} (ids {', '.join(sorted(self._ciphers))})"
            )
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, kid.encode())
        except (InvalidTag, ValueError):  # ValueError: shorter than a nonce
            raise PayloadDecryptionError(
                f"payload encrypted with key id {kid!r} fails authentication: it was altered "
                "or truncated"
            ) from None
        decoded = Payload()
        decoded.ParseFromString(plain)
        return decoded
