"""Fixtures for the compose-inference-gateway tables: XRs, required resources, Crossplane's echo.

Nothing here is a test. ``Fleet`` holds what the control plane would hand the
function (the gateway, its cluster, the fleet's clusters and gateways, caller
and TLS Secrets); ``echo`` turns a pass's desired resources into the observed
resources of the next pass, the way Crossplane and provider-kubernetes would.
"""

from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from fleetgate.core import names
from fleetgate.core.governance import group_key
from fleetgate.inference_gateway.composer import compose
from sim import controllers, pki
from tests.support import Outcome, next_pass, request, run, secret, settle

NS = "fleetgate-system"
GATEWAY = "public"
HOME = "hub"
CALLER_LABELS = {"fleetgate.dev/callers": "public"}
# Values the function must never see in the clear, let alone return.
ALICE_KEY = "sk-alice-0123456789abcdef"
BOB_KEY = "sk-bob-fedcba9876543210"
TLS_KEY = "-----BEGIN PRIVATE KEY-----tls-private-key"
Obj = dict[str, Any]
MAX_PASSES = 12


@cache
def ca_pem(name: str) -> str:
    """A real CA certificate (PEM), one per name, stable within the run."""
    return pki.ca(f"{name} CA").cert_pem.decode()


def gateway_xr(name: str = GATEWAY, *, created: str | None = None, **spec: Any) -> Obj:
    spec.setdefault("clusterName", HOME)
    meta: Obj = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": meta,
        "spec": spec,
    }


FULL_SPEC: Obj = {
    "hostname": "ai.example.com",
    "tls": {"certificateRefs": [{"name": "ai-example-tls"}]},
    "auth": {"secretSelector": {"matchLabels": CALLER_LABELS}},
    "serviceSelector": {"matchLabels": {"exposure": "public"}},
    "failover": {
        "retries": 2,
        "retryOn": {"httpStatusCodes": [503, 429, 502]},
        "outlierDetection": {"consecutive5xxErrors": 3, "baseEjectionTime": "1m"},
    },
}


def cluster_xr(
    name: str = HOME,
    *,
    provider_config: str | None = "hub-kubernetes",
    address: str | None = None,
    hostname: str | bool = True,
    ca: str | bool = True,
) -> Obj:
    """An InferenceCluster as its function left it; ``address`` set publishes its gateway."""
    status: Obj = {}
    if provider_config:
        status["providerConfigRef"] = {"name": provider_config}
    if address:
        published: Obj = {"address": address}
        if hostname:
            published["hostname"] = names.cluster_hostname(name) if hostname is True else hostname
        if ca:
            published["caCertificate"] = ca_pem(name) if ca is True else ca
        status["gateway"] = published
    return {
        "apiVersion": "fleetgate.dev/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {"credentials": {"providerConfigName": f"{name}-kubernetes"}},
        "status": status,
    }


def callers(name: str = "team-a", keys: dict[str, str] | None = None) -> Obj:
    found = secret(name, NS, keys if keys is not None else {"alice": ALICE_KEY, "bob": BOB_KEY})
    found["metadata"]["labels"] = dict(CALLER_LABELS)
    return found


def tls_secret(name: str = "ai-example-tls", keys: tuple[str, ...] = ("tls.crt", "tls.key")) -> Obj:
    values = {"tls.crt": "-----BEGIN CERTIFICATE-----tls", "tls.key": TLS_KEY}
    found = secret(name, NS, {k: values.get(k, "x") for k in keys})
    found["type"] = "kubernetes.io/tls"
    return found


@dataclass(frozen=True)
class Fleet:
    """The control plane as one pass sees it; ``None`` means Crossplane has not resolved it."""

    gateway: Obj
    cluster: list[Obj] | None
    clusters: list[Obj] | None
    gateways: list[Obj] | None
    callers: list[Obj] | None = None
    tls: dict[str, list[Obj] | None] = field(default_factory=dict)
    # The caller groups spec.auth.limits narrow to: their Secrets, by group name.
    groups: dict[str, list[Obj] | None] = field(default_factory=dict)

    def required(self) -> dict[str, list[Obj]]:
        found: dict[str, list[Obj] | None] = {
            "cluster": self.cluster,
            "clusters": self.clusters,
            "gateways": self.gateways,
            "caller-secrets": self.callers,
        }
        found |= {f"tls-secret-{n}": items for n, items in self.tls.items()}
        found |= {group_key(n): items for n, items in self.groups.items()}
        return {k: v for k, v in found.items() if v is not None}

    def with_(self, **changes: Any) -> "Fleet":
        return replace(self, **changes)

    def run(self, observed: dict[str, Obj] | None = None) -> Outcome:
        return run(compose, request(self.gateway, required=self.required(), observed=observed))

    def settled(self) -> Outcome:
        """The gateway at rest: passes, each observing the last one's desired resources as
        Crossplane would (``echo``), until they stop changing."""
        return settle(self.run, echo, what="the gateway", max_passes=MAX_PASSES)[-1]


def fleet(*, full: bool = False, clusters: list[Obj] | None = None, **spec: Any) -> Fleet:
    """A gateway whose every input exists: minimal, or with ``full`` every option set."""
    gateway = gateway_xr(**({**FULL_SPEC, **spec} if full else spec))
    home = cluster_xr()
    return Fleet(
        gateway=gateway,
        cluster=[home],
        clusters=clusters if clusters is not None else [home],
        gateways=[gateway],
        callers=[callers()] if full else None,
        tls={"ai-example-tls": [tls_secret()]} if full else {},
    )


def manifest(obj: Obj) -> Obj:
    """The remote object an Object carries."""
    found: Obj = obj["spec"]["forProvider"]["manifest"]
    return found


def kinds(out: Outcome) -> dict[str, str]:
    """Desired key → kind of the remote object."""
    return {key: manifest(obj)["kind"] for key, obj in sorted(out.desired.items())}


# What the cluster's controllers add to the objects they run, by desired key, for the
# generation the remote object is at (each readiness query judges it against it).
PROGRAMMED = {
    "status": {
        "addresses": [{"type": "IPAddress", "value": "198.51.100.7"}],
        "conditions": [
            {
                "type": "Programmed",
                "status": "True",
                "reason": "Programmed",
                "observedGeneration": controllers.GENERATION,
            }
        ],
    }
}


# An address from the load balancer, no condition yet: not programmed.
ADDRESSED = {"status": {"addresses": PROGRAMMED["status"]["addresses"], "conditions": []}}
# Nothing written yet by the object's controller (a merge patch: null removes).
UNREPORTED: Obj = {"status": None}


def accepted(status: str = "True", reason: str = "Accepted", message: str = "") -> Obj:
    """A Gateway API policy's status, as Envoy Gateway reports it per ancestor."""
    condition = {
        "type": "Accepted",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": controllers.GENERATION,
    }
    return {
        "status": {
            "ancestors": [
                {"ancestorRef": {"name": names.fleet_gateway(GATEWAY)}, "conditions": [condition]}
            ]
        }
    }


def published_ca(pem: str) -> Obj:
    return {"data": {"ca.crt": pem}}


def echo(
    out: Outcome,
    *,
    remote: dict[str, Obj] | None = None,
    not_ready: tuple[str, ...] = (),
    previous: dict[str, Obj] | None = None,
) -> dict[str, Obj]:
    """A pass's desired resources as Crossplane observes them on the next pass
    (``tests.support.next_pass``): ``remote`` is what the cluster's controllers wrote
    over what they would by default, ``not_ready`` what the provider has not reported;
    Secret copies are filled from the Secrets the pass was handed."""
    return next_pass(
        out.desired,
        owner=GATEWAY,
        answers=remote,
        not_ready=not_ready,
        previous=previous,
        control_plane=out.secrets,
    )
