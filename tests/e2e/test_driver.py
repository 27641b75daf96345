"""What both drivers read from manifests: merge patches and a cluster's trusted client CAs."""

import pytest

from e2e.driver import trust_problems, trusted_bundle
from e2e.fleet import Obj
from fleetgate.core import names
from sim.controllers import merge_patch


@pytest.mark.parametrize(
    ("target", "patch", "want"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, id="nested"
        ),
        pytest.param({"a": 1, "b": 2}, {"b": None}, {"a": 1}, id="null removes"),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists replaced"),
        pytest.param({"a": {"b": 1}}, {"a": 5}, {"a": 5}, id="object replaced by scalar"),
    ],
)
def test_merge_patch_is_rfc_7386(target: Obj, patch: Obj, want: Obj) -> None:
    assert merge_patch(target, patch) == want


def _policy(name: str, target: str, configmap: str | None) -> Obj:
    spec: Obj = {"targetRefs": [{"kind": "Gateway", "name": target}]}
    if configmap:
        spec["tls"] = {"clientValidation": {"caCertificateRefs": [{"name": configmap}]}}
    return {"kind": "ClientTrafficPolicy", "metadata": {"name": name}, "spec": spec}


def _configmap(name: str, ca: str) -> Obj:
    return {"kind": "ConfigMap", "metadata": {"name": name}, "data": {"ca.crt": ca}}


def test_the_trusted_bundle_is_the_cluster_gateways_not_a_fleet_gateways_on_the_same_cluster() -> (
    None
):
    """A fleet gateway's own listener policy shares the cluster; it validates no clients."""
    remote = [
        _policy("fleetgate-gw-internal-listener", "fleetgate-gw-internal", None),
        _policy("other", "fleetgate-gw-internal", "elsewhere"),
        _policy("client-validation", names.CLUSTER_GATEWAY, "client-cas"),
        _configmap("elsewhere", "not this\n"),
        _configmap("client-cas", "A\nB\n"),
    ]
    assert trusted_bundle(remote) == "A\nB\n"
    assert trusted_bundle(remote[:2]) is None


def test_trust_is_exactly_the_published_cas_in_gateway_order() -> None:
    published = {"public": "P", "internal": "I\n"}
    assert trust_problems(published, {"eu": "I\nP\n"}) == []
    assert trust_problems(published, {"eu": "P\n"}) == [
        "InferenceCluster eu trusts 'P\\n', not the 2 published CAs"
    ]
    assert trust_problems(published, {"us": None}) == [
        "InferenceCluster us validates no client certificates"
    ]
