"""A codec server: lets the Temporal UI (and `temporal` CLI) show encrypted histories in clear.

With `KUBERAY_TEMPORAL_PAYLOAD_KEY` set, every payload in a history is ciphertext
(`runtime.codec`), and the Temporal UI shows it as such. The UI can instead send payloads to a
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

A bearer token closes it to everyone else on the network: with `KUBERAY_TEMPORAL_CODEC_TOKEN`
set, or `--token-file` naming a file that holds it, every `/decode` and `/encode` request needs
`Authorization: Bearer <token>` and anything else gets a 401 that does not echo what was sent;
the comparison takes the same time whatever the guess. The token never comes from the command
line, where `ps` would show it. The `temporal` CLI sends it with `--codec-auth "Bearer <token>"`
(or `TEMPORAL_CODEC_AUTH`). The Temporal UI cannot send a fixed token: its
`codec.passAccessToken` forwards the signed-in user's own OIDC access token, which this server
does not verify, so a UI reaches it only without a token, i.e. on loopback (`kuberay-temporal
dev` does that) or through a port-forward. On any other address the command refuses to start
without a token unless `--insecure-no-token` says that an open decryption endpoint is meant.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import ipaddress
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import PayloadCodec

from runtime.codec import PAYLOAD_KEY_VARIABLE, EncryptionCodec, PayloadDecryptionError, parse_keys
from worker.running import stop_on_signals

DEFAULT_PORT = 8234
"""Beside the dev server's UI (8233)."""

MAX_BODY_BYTES = 16 * 1024 * 1024
"""A history page of payloads; aiohttp's default of 1 MiB is below a large RayService spec."""

TOKEN_VARIABLE = "KUBERAY_TEMPORAL_CODEC_TOKEN"
"""Holds the bearer token callers must present; unset (and no `--token-file`): none needed."""

_ALLOWED_HEADERS = "Content-Type, X-Namespace, Authorization"

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Converter = Callable[[Sequence[Payload]], Awaitable[list[Payload]]]


def build_codec_app(
    codec: PayloadCodec, origins: Sequence[str], token: str | None = None
) -> web.Application:
    """The codec endpoints over `codec`, callable by a browser only from `origins`.

    Args:
        codec: Decodes and encodes payloads (our `EncryptionCodec`).
        origins: Web origins (`scheme://host:port`) of the Temporal UI allowed to call.
        token: The bearer token every request must carry; None: no token is asked for.

    Returns:
        An aiohttp application with `POST /decode`, `POST /encode` and their CORS preflights.
    """
    allowed = {origin.rstrip("/") for origin in origins}

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in allowed:
            return web.Response(status=403, text=f"origin {origin} may not use this codec\n")
        if request.method == "OPTIONS":
            # A browser's preflight never carries credentials; the request after it must.
            response: web.StreamResponse = web.Response()
        elif token is not None and not bearer_matches(request.headers, token):
            response = _error(401, "a valid bearer token is required")
            response.headers["WWW-Authenticate"] = 'Bearer realm="codec"'
        else:
            response = await handler(request)
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


def bearer_matches(headers: Mapping[str, str], token: str) -> bool:
    """Whether the `Authorization` header is `Bearer <token>` (constant time in the token)."""
    scheme, _, given = headers.get("Authorization", "").partition(" ")
    # Digests of both: equal lengths, so the time taken does not even tell the token's length.
    matches = hmac.compare_digest(_digest(given.strip()), _digest(token))
    return scheme.lower() == "bearer" and matches


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()


@asynccontextmanager
async def serving_codec(
    codec: PayloadCodec,
    origins: Sequence[str],
    port: int,
    host: str = "127.0.0.1",
    token: str | None = None,
) -> AsyncIterator[int]:
    """Serve the codec endpoints for the duration of the block.

    Args:
        codec: Decodes and encodes payloads.
        origins: Temporal UI origins allowed to call from a browser.
        port: Port to listen on (0: any free one).
        host: Address to listen on; loopback by default (whoever reaches it can decrypt).
        token: Bearer token every request must carry; None: none is asked for.

    Yields:
        The port served on.
    """
    runner = web.AppRunner(build_codec_app(codec, origins, token), access_log=None)
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
            "--ui-codec-endpoint URL`); `kuberay-temporal dev` starts one by itself. With "
            f"{TOKEN_VARIABLE} or --token-file, callers must send `Authorization: Bearer "
            "<token>` (the temporal CLI's --codec-auth); a non-loopback --host needs one."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help=f"file holding the bearer token callers must send (instead of {TOKEN_VARIABLE})",
    )
    parser.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="serve a non-loopback address without a token: anyone who reaches it decrypts",
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
        0 after Ctrl-C or SIGTERM, 2 when the key or the token is missing or invalid, or when
        a non-loopback address would be served without a token.
    """
    try:
        codec = codec_from_env()
        token = token_from(os.environ, args.token_file)
        problem = exposure_problem(args.host, token, insecure=args.insecure_no_token)
        if problem is not None:
            raise ValueError(problem)
    except ValueError as err:
        print(f"kuberay-temporal codec-server: {err}", file=sys.stderr)
        return 2
    origins = args.origins or dev_ui_origins(8233)
    asyncio.run(_serve(codec, origins, args.port, args.host, token))
    return 0


def token_from(environ: Mapping[str, str], token_file: Path | None) -> str | None:
    """The bearer token from `KUBERAY_TEMPORAL_CODEC_TOKEN` or the file; None if neither.

    Raises:
        ValueError: Both are given, the file cannot be read, or the token is empty; the
            message names the source, never the token.
    """
    value = environ.get(TOKEN_VARIABLE)
    if value is not None and token_file is not None:
        raise ValueError(f"give the token in {TOKEN_VARIABLE} or --token-file, not both")
    source = TOKEN_VARIABLE
    if token_file is not None:
        source = f"--token-file {token_file}"
        try:
            value = token_file.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"{source}: cannot read it ({type(err).__name__})") from None
    if value is None:
        return None
    # A file usually ends in a newline, which no client sends.
    token = value.strip()
    if not token:
        raise ValueError(f"{source} is empty; unset it to serve without a token")
    if any(char.isspace() for char in token):
        raise ValueError(f"{source}: the token must not contain whitespace")
    return token


def exposure_problem(host: str, token: str | None, *, insecure: bool) -> str | None:
    """Why serving `host` without a token is refused, or None when it is fine."""
    if token is not None or insecure or is_loopback(host):
        return None
    return (
        f"--host {host} is reachable from other machines and anyone who reaches the codec "
        f"server decrypts: set {TOKEN_VARIABLE} or --token-file, or pass --insecure-no-token"
    )


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (`localhost` counts; other names do not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dev_ui_origins(ui_port: int) -> list[str]:
    """The origins a browser may show the dev server's UI on, bound to loopback."""
    return [f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}"]


async def _serve(
    codec: EncryptionCodec, origins: Sequence[str], port: int, host: str, token: str | None
) -> None:
    access = "bearer token required" if token is not None else "no token required"
    with stop_on_signals() as stop:
        async with serving_codec(codec, origins, port, host, token) as served:
            print(
                f"kuberay-temporal codec-server: http://{host}:{served} (key id "
                f"{codec.current_key_id}; {access}; browsers allowed from {', '.join(origins)})",
                flush=True,
            )
            await stop.wait()
