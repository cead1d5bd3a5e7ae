"""Container logs as the kubelet keeps them: one file per container attempt, stdout and stderr.

`kubectl logs` reads the current attempt, `--previous` the one before it (kept across one
restart, as the kubelet keeps the last terminated container), `-f` follows the current file
until that attempt ends. Files live under `<pod dir>/logs/<container>/<attempt>.log`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

_FOLLOW_POLL = 0.1  # seconds between checks for new output while following


def log_path(pod_dir: Path, container: str, attempt: int) -> Path:
    """Return where one attempt of a container writes its output."""
    return pod_dir / "logs" / container / f"{attempt}.log"


def attempts(pod_dir: Path, container: str) -> list[Path]:
    """Return a container's log files, oldest first."""
    directory = pod_dir / "logs" / container
    if not directory.is_dir():
        return []
    return sorted(directory.glob("*.log"), key=lambda p: int(p.stem))


def select(pod_dir: Path, container: str, previous: bool) -> Path | None:
    """Return the current (or previous) attempt's log file, if there is one."""
    files = attempts(pod_dir, container)
    index = -2 if previous else -1
    return files[index] if len(files) >= -index else None


def tail(text: bytes, lines: int | None) -> bytes:
    """Return the last `lines` lines of a log, as `tailLines` asks (None: all)."""
    if lines is None:
        return text
    if lines <= 0:
        return b""
    parts = text.splitlines(keepends=True)
    return b"".join(parts[-lines:])


async def follow(path: Path, start: int, still_writing: Callable[[], bool]) -> AsyncIterator[bytes]:
    """Yield what is appended to a log file from `start` until its writer has stopped."""
    offset = start
    while True:
        running = still_writing()
        with path.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
        if chunk:
            offset += len(chunk)
            yield chunk
        elif not running:
            return
        else:
            await asyncio.sleep(_FOLLOW_POLL)
