"""The real control plane's stand-in controllers, one round against a fake API server."""

from pathlib import Path
from typing import Any, cast

from plane.clusters import Cluster
from plane.kube import Kube, Obj
from plane.standins import Controllers
from sim.controllers import World

NAMESPACE = "fleetgate-system"
GATEWAY = "fleetgate-gw-public"


class FakeKube(Kube):
    """An API server holding a few objects; records every status written."""

    def __init__(self, objects: list[Obj]) -> None:
        super().__init__(server="https://fake.invalid", ca_file=Path("/nonexistent"))
        self.objects = objects
        self.statuses: dict[tuple[str, str], Any] = {}
        self.applied: list[Obj] = []

    def list(
        self, api_version: str, kind: str, namespace: str = "", selector: str = ""
    ) -> list[Obj]:
        return [o for o in self.objects if (o["apiVersion"], o["kind"]) == (api_version, kind)]

    def update_status(self, obj: Obj) -> Obj:
        self.statuses[(obj["kind"], obj["metadata"]["name"])] = obj["status"]
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        return next(
            (
                o
                for o in self.objects
                if (o["apiVersion"], o["kind"], o["metadata"]["name"]) == (api_version, kind, name)
            ),
            None,
        )

    def apply(
        self, obj: Obj, manager: str = "", subresource: str = "", strict: bool = False
    ) -> Obj:
        self.applied.append(obj)
        return obj


class FakeCluster:
    def __init__(self, kube: FakeKube) -> None:
        self.name = "eu-west-1"
        self.admin = kube


def one_round(*objects: Obj) -> dict[tuple[str, str], Any]:
    return _round(*objects).statuses


def _round(*objects: Obj, world: dict[str, dict[str, str]] | None = None) -> FakeKube:
    kube = FakeKube(list(objects))
    controllers = Controllers(cast(Cluster, FakeCluster(kube)), World(load_balancers=world or {}))
    controllers.round()
    assert controllers.errors == []
    return kube


def service(name: str, type_: str = "LoadBalancer", gateway: str | None = GATEWAY) -> Obj:
    labels = {"gateway.envoyproxy.io/owning-gateway-name": gateway} if gateway else {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "envoy-gateway-system", "labels": labels},
        "spec": {"type": type_},
    }


def test_a_gateway_s_load_balancer_gets_the_address_the_world_gives_its_cluster() -> None:
    """One ingress entry, hostname or IP, as a cloud's load balancer controller writes it."""
    world = {"eu-west-1": {"hostname": "elb.example.net"}}
    statuses = _round(service("envoy-gw"), world=world).statuses
    assert statuses[("Service", "envoy-gw")] == {
        "loadBalancer": {"ingress": [{"hostname": f"{GATEWAY}.elb.example.net"}]}
    }
    statuses = _round(service("envoy-gw"), world={"eu-west-1": {"ip": "203.0.113.10"}}).statuses
    ((entry,),) = [s["loadBalancer"]["ingress"] for s in statuses.values()]
    assert list(entry) == ["ip"]
    assert entry["ip"].startswith("203.0.113.")


def test_only_load_balancers_of_gateways_get_an_address() -> None:
    assert one_round(service("cluster-ip", type_="ClusterIP"), service("other", gateway=None)) == {}


def test_a_load_balancer_already_given_its_address_is_not_rewritten() -> None:
    lb = service("envoy-gw")
    lb["status"] = one_round(service("envoy-gw"))[("Service", "envoy-gw")]
    assert one_round(lb) == {}


def test_a_round_lists_only_the_kinds_whose_inputs_were_written() -> None:
    """As a controller's informers wake it: a written Secret runs the cert-manager passes
    (an Issuer waits for its CA's), and nothing runs what reads neither (listing every kind every
    second cost each workload API server CPU with the fleet at rest: issue 35)."""
    listed: list[str] = []

    class Counting(FakeKube):
        def list(
            self, api_version: str, kind: str, namespace: str = "", selector: str = ""
        ) -> list[Obj]:
            listed.append(kind)
            return super().list(api_version, kind, namespace, selector)

    controllers = Controllers(cast(Cluster, FakeCluster(Counting([]))), World(load_balancers={}))
    for written, passes in (
        ({"Secret"}, ["Issuer", "Certificate"]),
        ({"HTTPRoute"}, []),
        ({"Deployment", "Service"}, ["Service", "Deployment"]),
        (set(), []),
    ):
        listed.clear()
        controllers.round(written)
        assert listed == passes, written
    listed.clear()
    controllers.round()
    assert len(listed) == 4, "a round with nothing said about what was written runs every pass"


def test_a_certificate_s_secret_goes_with_its_certificate() -> None:
    """cert-manager with --enable-certificate-owner-ref, as Fleetgate runs it
    (pkg/controller/certificates/issuing/internal/secret.go:116-123, v1.21.2)."""
    issuer = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": "selfsigned", "namespace": NAMESPACE, "generation": 1},
        "spec": {"selfSigned": {}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]},
    }
    certificate = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "cluster-ca", "namespace": NAMESPACE, "generation": 1, "uid": "c-1"},
        "spec": {
            "secretName": "cluster-ca",
            "isCA": True,
            "commonName": "ca",
            "issuerRef": {"name": "selfsigned"},
        },
    }
    (secret,) = _round(issuer, certificate).applied
    assert secret["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "name": "cluster-ca",
            "uid": "c-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_a_ready_deployment_is_written_once_as_the_deployment_controller_writes_it() -> None:
    """Both of a DeploymentCondition's times (kubernetes v1.35.4 pkg/controller/deployment/
    util/deployment_util.go:104-113); once stored, the next round writes nothing, or every
    round would wake the Object that watches it, and its XR, again."""
    deployment: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "engine", "namespace": NAMESPACE, "generation": 2},
        "spec": {"replicas": 3},
    }
    status = one_round(deployment)[("Deployment", "engine")]
    assert status["readyReplicas"] == 3
    assert status["observedGeneration"] == 2
    for condition in status["conditions"]:
        assert {"lastTransitionTime", "lastUpdateTime"} <= set(condition), condition
        assert "observedGeneration" not in condition
    assert one_round({**deployment, "status": status}) == {}
