"""Child processes that end with their parent, however it ends (Linux `PR_SET_PDEATHSIG`)."""

from __future__ import annotations

import ctypes
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Run in the child before exec: the kernel SIGKILLs it when its parent dies.

    Even a SIGKILLed parent (a killed test run, `kill -9` of the dev stack) then leaves no
    orphan behind holding ports, the pod bridge or a state directory.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
