"""The dev server's command line, and its one-line errors."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.temporal_server import (
    DevServer,
    DevServerError,
    DevServerOptions,
    dev_server_command,
)
from tests.worker.ports import free_port
from worker.search_attributes import ALL_KEYS


def _flag_values(command: list[str], flag: str) -> list[str]:
    return [value for name, value in itertools.pairwise(command) if name == flag]


def test_command_persists_to_wal_sqlite_and_registers_our_attributes(tmp_path: Path) -> None:
    options = DevServerOptions(
        state_dir=tmp_path, port=17000, ui_port=18000, search_attributes=ALL_KEYS
    )

    command = dev_server_command(Path("/bin/temporal"), options)

    assert command[:3] == ["/bin/temporal", "server", "start-dev"]
    assert _flag_values(command, "--ip") == ["127.0.0.1"]
    assert _flag_values(command, "--port") == ["17000"]
    assert _flag_values(command, "--ui-port") == ["18000"]
    assert _flag_values(command, "--db-filename") == [str(tmp_path / "temporal.db")]
    assert _flag_values(command, "--sqlite-pragma") == ["journal_mode=wal", "synchronous=normal"]
    assert _flag_values(command, "--search-attribute") == [
        "RayKind=Keyword",
        "RayNamespace=Keyword",
        "RayName=Keyword",
        "RayState=Keyword",
    ]
    assert _flag_values(command, "--log-level") == ["warn"]
    assert "--ui-disable-news-fetch" in command


async def test_taken_port_fails_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        server = DevServer(
            temporal_cli(), DevServerOptions(state_dir=tmp_path, port=taken, ui_port=free_port())
        )

        with pytest.raises(DevServerError, match=rf"gRPC port 127.0.0.1:{taken} is already in use"):
            await server.start()

    assert server.pid is None
    assert not (tmp_path / "temporal.db").exists()


async def test_server_that_dies_at_start_up_is_reported_with_its_last_log_line(
    tmp_path: Path,
) -> None:
    options = DevServerOptions(state_dir=tmp_path, port=free_port(), ui_port=free_port())
    # A directory where the database file should be makes the server exit at once.
    options.database.mkdir(parents=True)
    server = DevServer(temporal_cli(), options)

    with pytest.raises(DevServerError, match=r"exited with code [1-9].* during start-up"):
        await server.start()


async def test_started_server_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    options = DevServerOptions(state_dir=tmp_path, port=free_port(), ui_port=free_port())

    async with DevServer(temporal_cli(), options) as server:
        assert server.pid is not None
        assert options.database.exists()

    assert await server.wait() == 0
