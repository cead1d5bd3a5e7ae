"""Whether a server listens where it should only: on its address, not on this machine's others.

127.0.0.2 is another address of this machine (Linux routes all of 127/8 to loopback), so a
server bound to 127.0.0.1 must not answer there, and one bound to every address would.
"""

from __future__ import annotations

import asyncio
import socket

OTHER_LOCAL_ADDRESS = "127.0.0.2"


async def refused(address: str, port: int) -> bool:
    """Whether a connection to `address:port` is refused.

    The port is held there meanwhile (bound, not listening), so no other process can answer
    in the place of the server under test; binding fails if something listens there already,
    as a server bound to every address does.
    """
    with socket.socket() as holder:
        holder.bind((address, port))
        try:
            _, writer = await asyncio.open_connection(address, port)
        except ConnectionRefusedError:
            return True
        writer.close()
        await writer.wait_closed()
        return False
