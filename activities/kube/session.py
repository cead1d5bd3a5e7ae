"""The HTTP session under the Kubernetes client: the environment read once, not per request.

kubernetes_asyncio opens its aiohttp session with `trust_env=True`, so aiohttp reads ~/.netrc and
the proxy variables again for every request, each in a thread of the default executor: two
thread hops and a file lookup per call, about a tenth of a busy worker's CPU (py-spy, 200
RayClusters). client-go reads the proxy variables once and never reads ~/.netrc; so do we. The
proxy is settled before the session is made; the session then trusts nothing from the
environment.
"""

from __future__ import annotations

import urllib.parse
import urllib.request

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration


def proxy_for(host_url: str) -> str | None:
    """The proxy the environment names for the API server at `host_url`, if it is not exempt.

    The same rules aiohttp applied per request: `NO_PROXY` exempts a host, `HTTP(S)_PROXY` by the
    server's scheme, and an `https://` proxy is not supported (aiohttp ignores it, so do we).
    """
    url = urllib.parse.urlsplit(host_url)
    if url.hostname and urllib.request.proxy_bypass(url.hostname):
        return None
    proxy = urllib.request.getproxies().get(url.scheme)
    if not proxy or urllib.parse.urlsplit(proxy).scheme != "http":
        return None
    return proxy


def settle_proxy(configuration: Configuration) -> None:
    """Set the configuration's proxy from the environment, unless the kubeconfig names one."""
    if not configuration.proxy and configuration.host:
        configuration.proxy = proxy_for(configuration.host)


def trust_no_environment(api: ApiClient) -> None:
    """Give the client a session on the same connections that reads nothing from the environment."""
    rest = api.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    connector = old.connector
    assert connector is not None, "a new client's session is open"
    # The read buffer kubernetes_asyncio chose: watch events of large objects exceed aiohttp's.
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector, trust_env=False, read_bufsize=2**21
    )
    old.detach()  # the connections now belong to the new session
