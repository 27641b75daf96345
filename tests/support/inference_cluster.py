"""Fixtures for the compose-inference-cluster tests: XRs, fleet gateways, and Crossplane's loop.

``settle`` plays Crossplane and the providers: it feeds each pass's desired
resources back as observed ones (``sim.controllers.World.observe``, with the
test's own controller answers patched over) until nothing new is composed. Nothing here is
a test; the tables live in the ``test_inference_cluster*`` modules.
"""

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from fleetgate.inference_cluster.composer import compose
from sim import pki
from tests import support
from tests.support import Outcome, next_pass, request, run

CLUSTER = "eu-west"
ADDRESS = "203.0.113.10"
KUBECONFIG = "eu-west-kubeconfig"
Resources = dict[str, dict[str, Any]]


@cache
def ca_pem(name: str) -> str:
    """A real self-signed CA certificate (PEM), one per name, stable within a test run."""
    return pki.ca(f"fleet gateway CA {name}").cert_pem.decode()


def cluster_xr(name: str = CLUSTER, **spec: Any) -> dict[str, Any]:
    spec.setdefault("credentials", {"secretRef": {"name": KUBECONFIG}})
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": spec,
    }


def gateway_xr(name: str, *, published: bool = True, pem: str | None = None) -> dict[str, Any]:
    """An InferenceGateway as another function left it: with its client CA, or not yet."""
    status: dict[str, Any] = {}
    if published:
        status["clientCACertificate"] = pem if pem is not None else ca_pem(name)
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": {"clusterName": "gateways-home"},
        "status": status,
    }


def manifest_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What lands on the cluster: an Object's manifest, else the resource itself."""
    if obj.get("kind") == "Object":
        return dict(obj["spec"]["forProvider"]["manifest"])
    return dict(obj)


def cluster_side(address: str | None = ADDRESS, cluster_ca: str | None = None) -> Resources:
    """What controllers on the cluster add (merge patches over what ``sim.controllers``'
    controllers report): the Gateway's address, trust-manager's CA copy."""
    remote: Resources = {
        "ca-published": {"data": {"ca.crt": cluster_ca or ca_pem("cluster")}},
    }
    addresses = None if address is None else [{"type": "IPAddress", "value": address}]
    remote["gateway"] = {"status": {"addresses": addresses}}
    return remote


def observe(
    desired: Resources,
    *,
    remote: Resources | None = None,
    ready: Callable[[str], bool] = lambda _: True,
    previous: Resources | None = None,
) -> Resources:
    """``tests.support.next_pass`` for the cluster: ``remote`` what its controllers wrote
    over what they would by default, not Ready what ``ready`` says is not yet."""
    return next_pass(
        desired,
        owner=CLUSTER,
        answers=remote,
        not_ready=[n for n in desired if not ready(n)],
        previous=previous,
    )


def settle(
    xr: dict[str, Any],
    required: dict[str, list[dict[str, Any]]] | None,
    *,
    remote: Resources | None = None,
    observed: Resources | None = None,
    max_passes: int = 20,
) -> list[Outcome]:
    """Run passes, observing everything as ready, until the desired state stops changing.

    Not merely the keys: a Helm upgrade (a release gaining values) changes an
    existing resource.
    """

    def answer(seen: Resources | None) -> Outcome:
        out = run(compose, request(xr, required=required, observed=seen or {}))
        assert out.fatal == [], out.fatal
        return out

    return support.settle(
        answer,
        lambda out: observe(out.desired, remote=remote),
        observed=observed,
        what="the cluster",
        max_passes=max_passes,
    )


def gateways(*names: str, unpublished: tuple[str, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    """The ``gateways`` requirement resolved to these InferenceGateways."""
    items = [gateway_xr(n) for n in names]
    items += [gateway_xr(n, published=False) for n in unpublished]
    return {"gateways": items}
