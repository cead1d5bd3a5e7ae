"""A codec server: lets the Temporal UI (and `temporal` CLI) show encrypted histories in clear.

With `KUBERAY_TEMPORAL_PAYLOAD_KEY` set, every payload in a history is ciphertext
(`worker.codec`), and the Temporal UI shows it as such. The UI can instead send payloads to a
"remote codec endpoint" from the browser, which answers with them decoded; this is that
endpoint, holding the same keys as the worker. It speaks Temporal's codec protocol:
`POST /decode` and `POST /encode` with a `temporal.api.common.v1.Payloads` message in its
protobuf JSON form (`{"payloads": [{"metadata": {...}, "data": "<base64>"}]}`), answered in
the same form.

Whoever reaches this server can decrypt, so it listens on 127.0.0.1 unless told otherwise,
and a browser may call it only from the UI origins it is given (CORS); a request carrying any
other `Origin` is refused, so no other web page can use a visitor's browser to decrypt.
Requests without an `Origin` (curl, the `temporal` CLI's `--codec-endpoint`) are served.
Errors name a key id at most, never a key or a payload's content.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from aiohttp import web
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from worker.codec import PAYLOAD_KEY_VARIABLE, EncryptionCodec, PayloadDecryptionError, parse_keys
from worker.running import stop_on_signals

DEFAULT_PORT = 8234
"""Beside the dev server's UI (8233)."""

MAX_BODY_BYTES = 16 * 1024 * 1024
"""A history page of payloads; aiohttp's default of 1 MiB is below a large RayService spec."""

_ALLOWED_HEADERS = "Content-Type, X-Namespace, Authorization"

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Converter = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


def build_codec_app(codec: PayloadCodec, origins: Sequence[str]) -> web.Application:
    """The codec endpoints over `codec`, callable by a browser only from `origins`.

    Args:
        codec: Decodes and encodes payloads (our `EncryptionCodec`).
        origins: Web origins (`scheme://host:port`) of the Temporal UI allowed to call.

    Returns:
        An aiohttp application with `POST /decode`, `POST /encode` and their CORS preflights.
    """
    allowed = {origin.rstrip("/") for origin in origins}

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in allowed:
            return web.Response(status=403, text=f"origin {origin} may not use this codec\n")
        response = await handler(request) if request.method != "OPTIONS" else web.Response()
        if origin is not None:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            response.headers["Access-Control-Allow-Headers"] = _ALLOWED_HEADERS
            response.headers["Access-Control-Allow-Credentials"] = "true"
            response.headers["Vary"] = "Origin"
        return response

    async def decode(request: web.Request) -> web.Response:
        return await _convert(request, codec.decode)

    async def encode(request: web.Request) -> web.Response:
        return await _convert(request, codec.encode)

    app = web.Application(middlewares=[cors], client_max_size=MAX_BODY_BYTES)
    for path, handler in (("/decode", decode), ("/encode", encode)):
        app.router.add_post(path, handler)
        app.router.add_route("OPTIONS", path, handler)  # answered by the middleware
    return app


async def _convert(request: web.Request, convert: Converter) -> web.Response:
    try:
        payloads = json_format.Parse(await request.text(), Payloads(), ignore_unknown_fields=True)
    except (json_format.ParseError, UnicodeDecodeError) as err:
        return _error(400, f"the body is not a Payloads message in protobuf JSON: {err}")
    try:
        converted = await convert(list(payloads.payloads))
    except PayloadDecryptionError as err:
        logger.warning("codec server: %s", err)
        return _error(400, str(err))
    body = json_format.MessageToDict(Payloads(payloads=converted))
    return web.json_response(body)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"message": message}, status=status)


@asynccontextmanager
async def serving_codec(
    codec: PayloadCodec, origins: Sequence[str], port: int, host: str = "127.0.0.1"
) -> AsyncIterator[int]:
    """Serve the codec endpoints for the duration of the block.

    Args:
        codec: Decodes and encodes payloads.
        origins: Temporal UI origins allowed to call from a browser.
        port: Port to listen on (0: any free one).
        host: Address to listen on; loopback by default (whoever reaches it can decrypt).

    Yields:
        The port served on.
    """
    runner = web.AppRunner(build_codec_app(codec, origins), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def codec_from_env() -> EncryptionCodec:
    """The codec of the keys in `KUBERAY_TEMPORAL_PAYLOAD_KEY`.

    Raises:
        ValueError: The variable is unset or invalid; the message names it, never its value.
    """
    value = os.environ.get(PAYLOAD_KEY_VARIABLE)
    if value is None:
        raise ValueError(
            f"{PAYLOAD_KEY_VARIABLE} is not set: the codec server needs the worker's key(s)"
        )
    try:
        return EncryptionCodec(parse_keys(value))
    except ValueError as err:
        raise ValueError(f"{PAYLOAD_KEY_VARIABLE}: {err}") from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `codec-server` subcommand.

    Args:
        subparsers: The dispatcher's subcommand collection.
    """
    parser = subparsers.add_parser(
        "codec-server",
        help="decrypt encrypted histories for the Temporal UI (remote codec endpoint)",
        description=(
            f"Serve Temporal's codec endpoints (POST /decode, /encode) with the keys in "
            f"{PAYLOAD_KEY_VARIABLE}, so the Temporal UI shows encrypted histories in clear. "
            "Point the UI at it (its codec endpoint setting, or `temporal server start-dev "
            "--ui-codec-endpoint URL`); `kuberay-temporal dev` starts one by itself."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        dest="origins",
        metavar="URL",
        help="Temporal UI origin allowed to call from a browser; repeatable "
        "(default http://localhost:8233 and http://127.0.0.1:8233, the dev server's UI)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted.

    Args:
        args: Parsed command line.

    Returns:
        0 after Ctrl-C or SIGTERM, 2 when the key is missing or invalid.
    """
    try:
        codec = codec_from_env()
    except ValueError as err:
        print(f"kuberay-temporal codec-server: {err}", file=sys.stderr)
        return 2
    origins = args.origins or dev_ui_origins(8233)
    asyncio.run(_serve(codec, origins, args.port, args.host))
    return 0


def dev_ui_origins(ui_port: int) -> list[str]:
    """The origins a browser may show the dev server's UI on, bound to loopback."""
    return [f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}"]


async def _serve(codec: EncryptionCodec, origins: Sequence[str], port: int, host: str) -> None:
    with stop_on_signals() as stop:
        async with serving_codec(codec, origins, port, host) as served:
            print(
                f"kuberay-temporal codec-server: http://{host}:{served} (key id "
                f"{codec.current_key_id}; browsers allowed from {', '.join(origins)})",
                flush=True,
            )
            await stop.wait()
