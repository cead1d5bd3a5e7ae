"""Dashboard URLs are built from DNS labels only.

Dashboard URLs are built from Service, pod and namespace names; a CR-chosen name must not turn
into another namespace's proxy path or another host. (Which Service is called at all is
`activities.dashboard.heads`' rule, tested in `test_heads.py`.)
"""

from __future__ import annotations

import pytest

from activities.dashboard.errors import DashboardError
from activities.dashboard.urls import pod_base_url, pod_proxied_base_url, proxied_base_url

API = "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    "name",
    ["../../b/services/victim-head-svc", "evil.example:80/#", "a/b", "", "Head", "x" * 64],
)
def test_no_url_is_built_from_a_name_that_is_not_a_label(name: str) -> None:
    with pytest.raises(DashboardError, match="refusing to address"):
        proxied_base_url(API, "a", name)
    with pytest.raises(DashboardError, match="refusing to address"):
        proxied_base_url(API, name, "head-svc")
    with pytest.raises(DashboardError, match="refusing to address"):
        pod_base_url(name, 8265)
    with pytest.raises(DashboardError, match="refusing to address"):
        pod_proxied_base_url(API, "a", name, 8000)


def test_valid_names_make_the_urls_they_always_made() -> None:
    assert proxied_base_url(API, "a", "head-svc") == (
        f"{API}/api/v1/namespaces/a/services/head-svc:dashboard/proxy"
    )
    assert pod_base_url("10.244.0.7", 8265) == "http://10.244.0.7:8265"
    assert pod_proxied_base_url(API, "a", "c-head-x.y", 8000) == (
        f"{API}/api/v1/namespaces/a/pods/c-head-x.y:8000/proxy"
    )
