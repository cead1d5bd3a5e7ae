"""The dev server's command line, and its one-line errors."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from devcluster.ports import free_port
from kuberay_temporal.binaries import temporal_cli
from kuberay_temporal.temporal_server import (
    DevServer,
    DevServerError,
    DevServerOptions,
    dev_server_command,
)
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


async def test_server_that_panics_at_start_up_is_reported_with_the_error_not_the_stack(
    tmp_path: Path,
) -> None:
    # A stand-in binary: the real server panics so only when a port it drew at random is
    # taken between its check and its bind, which no test can bring about on demand. The
    # output is the shape temporal 1.9.1 printed when its metrics server held the gRPC port.
    binary = tmp_path / "temporal"
    binary.write_text(
        "#!/bin/sh\n"
        "echo 'time=T level=WARN msg=\"Cluster Id is not a valid uuid\"'\n"
        'echo \'time=T level=ERROR msg="Failed to start gRPC listener" '
        'error="listen tcp 127.0.0.1:1: bind: address already in use"\'\n'
        "echo 'panic: runtime error: invalid memory address or nil pointer dereference'\n"
        "echo 'goroutine 1 [running]:'\n"
        "echo 'main.main()'\n"
        "echo '\t/home/runner/work/cli/cli/cmd/temporal/main.go:18 +0x8e'\n"
        "exit 2\n"
    )
    binary.chmod(0o755)
    options = DevServerOptions(state_dir=tmp_path, port=free_port(), ui_port=free_port())

    with pytest.raises(DevServerError) as raised:
        await DevServer(binary, options).start()

    message = str(raised.value)
    assert "exited with code 2 during start-up" in message
    assert "Failed to start gRPC listener" in message
    assert "bind: address already in use" in message
    assert "main.go" not in message
