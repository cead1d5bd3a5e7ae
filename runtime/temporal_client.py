"""The one way the worker, the bridge (and the dev stack) connect to Temporal.

Every payload in this project is a pydantic model, so every client must use the pydantic
data converter; connecting in one place keeps the converter from being forgotten, and keeps
the TLS, mTLS and API-key handling (self-hosted with its own CA, or Temporal Cloud) the same
for every process. With `KUBERAY_TEMPORAL_PAYLOAD_KEY` set, the converter also encrypts
every payload (`runtime.codec`), so the worker, the bridge and the CLI read each other's.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from temporalio.client import Client, Interceptor
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from runtime.codec import EncryptionCodec, parse_keys
from runtime.settings import Settings


def data_converter(settings: Settings) -> DataConverter:
    """The converter every client uses: pydantic, plus encryption when a key is set.

    Args:
        settings: The payload key(s), if any.

    Returns:
        The pydantic data converter; with a key, a copy that encrypts payloads and also
        moves failure messages and stack traces into (encrypted) payloads, since activity
        errors quote names and specs.
    """
    codec = payload_codec(settings)
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


def payload_codec(settings: Settings) -> EncryptionCodec | None:
    """The encryption codec of the payload key(s) in `settings`; None when none is set."""
    if settings.payload_key is None:
        return None
    return EncryptionCodec(parse_keys(settings.payload_key.get_secret_value()))


def tls_config(settings: Settings) -> TLSConfig | bool:
    """The `tls` argument for `Client.connect` that `settings` ask for.

    Args:
        settings: The TLS switch, certificate paths and API key.

    Returns:
        False for plaintext, True for TLS with the system's roots, or a `TLSConfig` carrying
        the CA, the client certificate and key (mTLS) and the server name.

    Raises:
        OSError: A certificate or key file cannot be read.
    """
    files = (
        settings.temporal_tls_client_cert_path,
        settings.temporal_tls_client_key_path,
        settings.temporal_tls_server_ca_cert_path,
    )
    enabled = settings.temporal_tls
    if enabled is None:
        # Temporal Cloud with an API key is TLS with the system's roots; so is anything
        # that brings its own certificates.
        enabled = any(files) or settings.temporal_api_key is not None
    if not enabled:
        return False
    if not any(files) and settings.temporal_tls_server_name is None:
        return True
    cert, key, ca = (Path(path).read_bytes() if path else None for path in files)
    return TLSConfig(
        server_root_ca_cert=ca,
        domain=settings.temporal_tls_server_name,
        client_cert=cert,
        client_private_key=key,
    )


async def connect(
    settings: Settings,
    runtime: Runtime | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Client:
    """Connect to the Temporal frontend named by `settings`.

    Args:
        settings: Address, namespace, TLS and API key to use.
        runtime: The SDK runtime (its metrics exporter, see `runtime.prometheus`); None: the
            default one.
        interceptors: Client interceptors, which workers built on the client inherit (the
            tracing one of `runtime.telemetry`).

    Returns:
        A connected client with the converter of `data_converter(settings)`.

    Raises:
        RuntimeError: The server cannot be reached (raised by the SDK).
        OSError: A TLS file cannot be read.
    """
    api_key = settings.temporal_api_key
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=data_converter(settings),
        tls=tls_config(settings),
        api_key=api_key.get_secret_value() if api_key is not None else None,
        runtime=runtime,
        interceptors=interceptors,
    )


def exit_without_finalizing(code: int) -> NoReturn:
    """End the process with `code` once everything has been shut down explicitly.

    The SDK's Rust threads outlive the event loop and sometimes touch Python while the
    interpreter finalizes, aborting a finished, clean run with SIGABRT ("PyGILState_Release
    ... finalizing"; seen in about one run in six here). Command handlers
    that used a client call this after stopping their worker and servers, so the exit code
    is the one they chose.

    Args:
        code: Process exit code.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
