"""deploy/'s identities on a real API server, and kubeconfigs that authenticate as them."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from activities.kube import client as kube
from activities.kube.errors import KubeForbidden
from devcluster.control_plane.processes import ControlPlane
from kuberay_temporal.service_accounts import (
    BRIDGE,
    CLUSTER_ROLES,
    WORKER,
    apply_identities,
    deploy_identities,
    render_identities,
)
from tests.deploy.rendering import by_kind, kustomize_docs

SELF_SUBJECT_REVIEWS = kube.Resource("authentication.k8s.io", "v1", "selfsubjectreviews", False)


async def test_the_identities_are_deploys_rbac_as_kustomize_renders_it() -> None:
    rendered = await render_identities()
    assert {d["kind"] for d in rendered} == {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    }
    base = kustomize_docs()
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
        assert by_kind(rendered, kind) == by_kind(base, kind)
    assert set(by_kind(rendered, "ServiceAccount")) == {WORKER, BRIDGE}


async def test_a_component_adds_its_rules() -> None:
    proxied = by_kind(await render_identities(["dashboard-proxy"]), "ClusterRole")[WORKER]
    base = by_kind(await render_identities(), "ClusterRole")[WORKER]
    added = [rule for rule in proxied["rules"] if rule not in base["rules"]]
    assert [rule["resources"] for rule in added] == [["services/proxy"], ["pods/proxy"]]


async def test_a_kubeconfig_authenticates_as_its_service_account(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    identities = await deploy_identities(control_plane.kubeconfig_path, tmp_path)
    for path, account in ((identities.worker, WORKER), (identities.bridge, BRIDGE)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds a token
        client = await kube.connect(str(path))
        try:
            review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            answer = await client.create(SELF_SUBJECT_REVIEWS, None, review)
            user = answer["status"]["userInfo"]["username"]
            assert user == f"system:serviceaccount:kuberay-temporal:{account}"
            # RBAC applies: neither account may read Secrets in bulk.
            with pytest.raises(KubeForbidden, match="cannot list resource"):
                await client.list_all(kube.SECRETS, "default")
        finally:
            await client.close()


async def test_applying_again_puts_back_what_was_taken_away(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    admin = await kube.connect(str(control_plane.kubeconfig_path))
    try:
        await deploy_identities(control_plane.kubeconfig_path, tmp_path)
        role = await admin.get(CLUSTER_ROLES, None, WORKER)
        wanted = role["rules"]
        role["rules"] = wanted[1:]
        await admin.request("PUT", CLUSTER_ROLES.path(None, WORKER), body=role)
        await apply_identities(admin, await render_identities())
        assert (await admin.get(CLUSTER_ROLES, None, WORKER))["rules"] == wanted
    finally:
        await admin.close()
