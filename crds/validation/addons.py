"""Rules for the optional add-ons: the generated NetworkPolicy, and those not carried out yet.

Add-ons make objects or containers that KubeRay builds from the spec. The NetworkPolicy
rules must make sense for the chosen deny mode and point at existing worker groups (whose
names go into NetworkPolicy names, so they must be DNS labels). The history-server collector
is refused with the field's path (`not_carried_out`).
"""

from __future__ import annotations

from crds.enums import NetworkPolicyMode
from crds.messages import quoted
from crds.raycluster import NetworkPolicyRules
from crds.validation.names import dns1123_label_problem
from crds.validation.scope import ClusterScope
from crds.violations import Violation, join_path


def network_policy(scope: ClusterScope) -> list[Violation]:
    """Rules per side must match the deny mode; per-group entries must name real groups."""
    policy = scope.spec.network_policy
    if policy is None:
        return []
    mode = policy.mode or NetworkPolicyMode.DENY_ALL
    base = scope.at("networkPolicy")
    found = _rules_for_mode(join_path(base, "head"), policy.head, mode)
    found += _rules_for_mode(join_path(base, "worker"), policy.worker, mode)
    names: set[str] = set()
    for index, group in enumerate(scope.spec.worker_group_specs or []):
        names.add(group.group_name)
        problem = dns1123_label_problem(group.group_name)
        if problem is not None:
            path = scope.at("workerGroupSpecs", index, "groupName")
            message = (
                f"with networkPolicy set, the name goes into NetworkPolicy names and {problem}"
            )
            found.append(Violation(path, message))
    for index, entry in enumerate(policy.worker_groups or []):
        entry_path = join_path(base, "workerGroups", index)
        found += _rules_for_mode(entry_path, entry, mode)
        if entry.group_name not in names:
            message = f"no worker group is named {quoted(entry.group_name)}"
            found.append(Violation(join_path(entry_path, "groupName"), message))
    return found


def _rules_for_mode(
    path: str, rules: NetworkPolicyRules | None, mode: NetworkPolicyMode
) -> list[Violation]:
    if rules is None:
        return []
    if mode == NetworkPolicyMode.DENY_ALL_EGRESS and rules.ingress_rules:
        message = f"ingressRules have no effect with mode {mode.value}: ingress is not restricted"
        return [Violation(join_path(path, "ingressRules"), message)]
    if mode == NetworkPolicyMode.DENY_ALL_INGRESS and rules.egress_rules:
        message = f"egressRules have no effect with mode {mode.value}: egress is not restricted"
        return [Violation(join_path(path, "egressRules"), message)]
    return []


def not_carried_out(scope: ClusterScope) -> list[Violation]:
    """Fields KubeRay acts on that we do not yet: refused, never accepted and dropped.

    The history-server collector sidecar (`historyServerOptions`) would make KubeRay add
    containers the user then relies on; accepting the spec and adding nothing would fail later
    and silently.
    """
    if scope.spec.history_server_options is None:
        return []
    message = (
        "KubeRay's history-server collector sidecar is not added by kuberay-temporal yet; "
        "remove historyServerOptions"
    )
    return [Violation(scope.at("historyServerOptions"), message)]


RULES = (not_carried_out, network_policy)
