"""Fixtures for the compose-model-service tests: a ModelService's fleet, and Crossplane's echo.

Nothing here is a test. The fixtures build what Crossplane hands the function
for a ModelService (gateways, clusters, endpoints, credential Secrets); the
readers pick the response apart; the echoes turn a pass's desired state into
the next pass's observed state the way Crossplane and provider-kubernetes
would: each Object with the remote object (a Secret with the value
provider-kubernetes patched into it) and the Ready its readiness query
derives from it, each ModelRoute with the status its own reconcile reported.
"""

import base64
import copy
import json
from collections.abc import Iterable
from typing import Any

from fleetgate.core.secrets import holder_name
from fleetgate.model_service.composer import compose
from fleetgate.model_service.naming import (
    ROUTE_KEY_MARK,
    Service,
    endpoint_key,
    is_ai_gateway_route_key,
    is_route_key,
    model_route_key,
    route_keys,
)
from sim import controllers, pipeline
from sim.pki import ca
from tests.support import CONTROLLERS, Outcome, request, run, secret

NS = "team-a"
API = "fleetgate.dev/v1alpha1"
API_KEY_VALUE = "sk-live-do-not-leak-0123456789"
SVC = Service(NS, "chat")
CLUSTER_CA = ca("eu-1 cluster CA").cert_pem.decode()
CLIENT_CA = ca("public gateway client CA").cert_pem.decode()

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
COMPOSITION_RESOURCE_NAME = "crossplane.io/composition-resource-name"

Obj = dict[str, Any]
Required = dict[str, list[Obj]]


# --- fixtures: the resources Crossplane hands the function --------------------


def service(*entries: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": NS, "labels": labels or {}},
        "spec": {"endpoints": list(entries)},
    }


def entry(weight: int = 1, priority: int = 0, **labels: str) -> dict[str, Any]:
    return {"selector": {"matchLabels": labels}, "weight": weight, "priority": priority}


def endpoint(
    name: str,
    origin: str,
    *,
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    **spec: Any,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
        "spec": {"origin": origin, **spec},
    }
    if ready is not None:
        reason = "CredentialPresent" if ready == "True" else "CredentialMissing"
        obj["status"] = {
            "conditions": [{"type": "EndpointReady", "status": ready, "reason": reason}]
        }
    return obj


def hosted(name: str, cluster: str, **kwargs: Any) -> dict[str, Any]:
    """A fleet-hosted endpoint, as compose-model-deployment publishes it."""
    labels = {"fleetgate.dev/cluster": cluster, "fleetgate.dev/deployment": "qwen"}
    labels |= kwargs.pop("labels", {})
    return endpoint(
        name,
        f"https://{cluster}-0123456789.fleetgate-system.svc.cluster.local",
        labels=labels,
        api={"schema": "OpenAI", "prefix": f"/{NS}/qwen/v1"},
        model=f"{NS}/qwen",
        **kwargs,
    )


def third_party(name: str, **kwargs: Any) -> dict[str, Any]:
    return endpoint(
        name,
        kwargs.pop("origin", "https://api.openai.com"),
        labels=kwargs.pop("labels", {"provider": name}),
        model=kwargs.pop("model", "gpt-4o-mini"),
        credentialRef=kwargs.pop("credentialRef", {"name": name}),
        **kwargs,
    )


def gateway(
    name: str = "public",
    cluster: str = "edge",
    *,
    selector: dict[str, str] | None = None,
    client_ca: str | None = CLIENT_CA,
    failover: dict[str, Any] | None = None,
    tls: bool = False,
    auth: bool = True,
    reachable: tuple[str, ...] = ("eu-1", "us-1"),
) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterName": cluster}
    if auth:
        spec["auth"] = {"secretSelector": {"matchLabels": {"gateway": name}}}
    if tls:
        spec["hostname"] = f"{name}.example.com"
        spec["tls"] = {"certificateRefs": [{"name": f"{name}-tls"}]}
    if selector is not None:
        spec["serviceSelector"] = {"matchLabels": selector}
    if failover is not None:
        spec["failover"] = failover
    status: dict[str, Any] = {"endpoints": {"openAI": f"https://{name}.example.com/v1"}}
    if client_ca is not None:
        status["clientCACertificate"] = client_ca
        status["reachableClusters"] = list(reachable)
    return {
        "apiVersion": API,
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


def cluster(
    name: str, *, provider_config: str | None = None, ca_pem: str | None = CLUSTER_CA
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if provider_config is not None:
        status["providerConfigRef"] = {"name": provider_config}
    if ca_pem is not None:
        status["gateway"] = {"caCertificate": ca_pem, "hostname": f"{name}.example"}
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {"credentials": {"providerConfigName": f"pc-{name}"}},
        "status": status,
    }


def fleet(*endpoint_lists: list[dict[str, Any]], **extra: list[dict[str, Any]]) -> Required:
    """One serving gateway on cluster ``edge``, clusters eu-1 and us-1, the given endpoints."""
    required: Required = {
        "gateways": [gateway()],
        "clusters": [
            cluster("edge", provider_config="pc-edge"),
            cluster("eu-1"),
            cluster("us-1"),
        ],
        "credential-openai": [secret("openai", NS, {"apiKey": API_KEY_VALUE})],
    }
    for i, found in enumerate(endpoint_lists):
        required[f"endpoints-{i}"] = found
    required.update(extra)
    return required


CANARY = service(
    entry(90, track="stable"),
    entry(10, track="canary"),
    entry(1, 1, provider="openai"),
)


def canary_fleet(**extra: list[dict[str, Any]]) -> Required:
    return fleet(
        [hosted("qwen-eu-1", "eu-1", labels={"track": "stable"})],
        [hosted("qwen-us-1", "us-1", labels={"track": "canary"})],
        [third_party("openai")],
        **extra,
    )


# --- reading a ModelService's response ----------------------------------------------


def model_routes(out: Outcome) -> dict[str, Obj]:
    """The ModelRoutes a ModelService composed, by gateway."""
    return {
        obj["spec"]["gateway"]["name"]: obj
        for obj in out.desired.values()
        if obj["kind"] == "ModelRoute"
    }


def plan(out: Outcome, gw: str = "public") -> list[Obj]:
    """The backends a gateway's ModelRoute carries."""
    backends: list[Obj] = model_routes(out)[gw]["spec"]["backends"]
    return backends


def backend_refs(out: Outcome, gw: str = "public") -> list[tuple[str, int, int]]:
    """(endpoint, weight, priority level) per backend of the gateway's route."""
    return [(b["endpoint"], b["weight"], b["priority"]) for b in plan(out, gw)]


def routed(out: Outcome, gw: str = "public") -> set[str]:
    return {b["endpoint"] for b in plan(out, gw)} if gw in model_routes(out) else set()


def condition(out: Outcome) -> tuple[str, str, str]:
    return out.conditions["RoutingReady"]


# --- a ModelRoute's reconcile ------------------------------------------------------


def route_of(out: Outcome, gw: str = "public", **observed: Obj) -> Outcome:
    """Reconcile the ModelRoute a ModelService composed for ``gw``, as Crossplane would.

    Without ``observed``, its backends are already on the gateway's cluster (the
    route names a backend only then), and nothing else is."""
    return reconcile_route(model_routes(out)[gw], observed or None)


def reconcile_route(xr: Obj, observed: dict[str, Obj] | None = None) -> Outcome:
    """Reconcile ModelRoute ``xr``; without ``observed``, once its backends are on the
    gateway's cluster (the route names a backend only then) and nothing else is."""
    if observed is None:
        observed = backends_arrived(run(compose, request(xr)))
    return run(compose, request(xr, observed=observed))


def backends_arrived(out: Outcome) -> dict[str, Obj]:
    """The Backends and AIServiceBackends a ModelRoute composed, applied to the cluster."""
    roles = ("/backend", "/ai-service-backend")
    return {k: v for k, v in as_observed(out).items() if k.endswith(roles)}


def manifest(out: Outcome, key: str) -> Obj:
    """The remote object a ModelRoute composed under ``key``."""
    found: Obj = out.desired[key]["spec"]["forProvider"]["manifest"]
    return found


def route_key(out: Outcome, role: str = "route") -> str:
    """The composition name of ``role`` (route, generated-route, strict-tiers, caller-access,
    caller-traffic) of the route a ModelRoute composed for the backends on the cluster
    (``status.route``), beside any route it replaces."""
    name = out.composite["status"]["route"]
    (key,) = [
        k
        for k in out.desired
        if is_ai_gateway_route_key(k) and manifest(out, k)["metadata"]["name"] == name
    ]
    return role + key.removeprefix("route")


def only_route_key(keys: Iterable[str], role: str) -> str:
    """The one composition name of ``role`` (``route_key``) among ``keys`` of a settled route."""
    (key,) = [k for k in keys if is_route_key(k) and k.partition(ROUTE_KEY_MARK)[0] == role]
    return key


def route_manifest(out: Outcome, role: str = "route") -> Obj:
    """The remote object of ``role`` (``route_key``) of the route a ModelRoute composed."""
    return manifest(out, route_key(out, role))


def route_policy_spec(out: Outcome, role: str, kind: str) -> Obj:
    """The rest of the spec of the route's ``role`` policy, once it is a ``kind`` named after
    the route, targets it and merges into the gateway's own ``kind`` (never replacing it)."""
    policy = route_manifest(out, role)
    route = out.composite["status"]["route"]
    assert (policy["kind"], policy["metadata"]["name"]) == (kind, route)
    spec = dict(policy["spec"])
    target = {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route}
    assert spec.pop("targetRefs") == [target]
    assert spec.pop("mergeType") == "StrategicMerge"
    return spec


def objects_for(*endpoints: str, credentials: tuple[str, ...] = ()) -> set[str]:
    """The composition resource names of a ModelRoute routing ``endpoints``."""
    route = route_keys(endpoints)
    keys = {route.route, route.generated, route.tiers}
    for ep in endpoints:
        keys |= {endpoint_key(ep, "backend"), endpoint_key(ep, "ai-service-backend")}
    for ep in credentials:
        api_key = endpoint_key(ep, "api-key")
        keys |= {endpoint_key(ep, "security-policy"), api_key, holder_name(api_key)}
    return keys


# --- Crossplane's echo ---------------------------------------------------------------


def as_observed(
    out: Outcome, *, accepted: bool = True, refusal: str = "", unresolved: str = ""
) -> dict[str, Obj]:
    """A ModelRoute's Objects as Crossplane observes them after provider-kubernetes applied them.

    Every Object reports the remote object in ``status.atProvider.manifest``
    and is Ready as its own readiness policy derives it from that remote
    object (``controllers.object_ready``): with ``accepted`` the remote
    controllers have accepted everything, otherwise they refused it
    (``refusal`` is the route's message, in the ``NotAccepted`` condition
    Envoy AI Gateway v1.1.0 writes).
    The observed HTTPRoute AI Gateway generates carries Envoy Gateway's
    per-parent Accepted and ResolvedRefs; ``unresolved`` is the message of a
    ResolvedRefs False. A Secret comes back carrying its value the way provider-kubernetes
    leaves it: patched into the Object's own ``spec.forProvider.manifest`` and
    last-applied annotation (crossplane-contrib/provider-kubernetes#223) and,
    without --sanitize-secrets, its status. The function must never echo it.
    """
    observed = {}
    for key, desired in out.desired.items():
        obj = copy.deepcopy(desired)
        remote = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        if remote["kind"] == "Secret":
            data = {"apiKey": base64.b64encode(API_KEY_VALUE.encode()).decode()}
            remote["data"] = data
            obj["spec"]["forProvider"]["manifest"]["data"] = dict(data)
            obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(remote)}
        elif remote["kind"] == "HTTPRoute":
            remote["spec"] = {"parentRefs": [{"name": "gw"}]}
            remote = CONTROLLERS.remote(remote, "", set())
            if unresolved:
                parent = remote["status"]["parents"][0]
                parent["conditions"] = [
                    c for c in parent["conditions"] if c["type"] != "ResolvedRefs"
                ] + [
                    {
                        "type": "ResolvedRefs",
                        "status": "False",
                        "reason": "InvalidKind",
                        "message": unresolved,
                    }
                ]
        elif remote["kind"] == "AIGatewayRoute" and not accepted:
            remote["status"] = {
                "conditions": [
                    {
                        "type": "NotAccepted",
                        "status": "False",
                        "reason": "ReconciliationFailed",
                        **({"message": refusal} if refusal else {}),
                    }
                ]
            }
        elif not accepted and remote["kind"] != "EnvoyPatchPolicy":
            remote["status"] = {
                "conditions": [{"type": "Accepted", "status": "False", "reason": "Accepted"}]
            }
        else:  # what Envoy Gateway and Envoy AI Gateway report for what they accepted
            remote = CONTROLLERS.remote(remote, "", set())
        ready = controllers.object_ready(obj, remote)
        obj["metadata"].setdefault("annotations", {})[COMPOSITION_RESOURCE_NAME] = key
        observed[key] = controllers.applied(obj, remote=remote, ready=ready)
    return observed


def routes_observed(out: Outcome, *, accepted: bool = True, refusal: str = "") -> dict[str, Obj]:
    """A ModelService's ModelRoutes as observed once each reconciled twice.

    Each ModelRoute composes, its Objects are applied (accepted or refused),
    and it reports; the ModelService then sees it as stored: with what
    Crossplane recorded under ``spec.crossplane`` and the status it reported.
    """
    observed = {}
    for gw, desired in sorted(model_routes(out).items()):
        composed = route_of(out, gw)
        reported = route_of(out, gw, **as_observed(composed, accepted=accepted, refusal=refusal))
        obj = copy.deepcopy(desired)
        obj["metadata"]["annotations"] = {COMPOSITION_RESOURCE_NAME: model_route_key(gw)}
        obj["metadata"]["labels"]["crossplane.io/composite"] = "chat"
        obj["metadata"]["uid"] = f"uid-{gw}"
        obj["spec"]["crossplane"] = {
            "compositionRef": {"name": "modelroutes.fleetgate.dev"},
            "resourceRefs": [
                {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": f"{gw}-{key}"}
                for key, o in sorted(reported.desired.items())
            ],
        }
        obj["status"] = pipeline.xr_status(reported.rsp)
        observed[model_route_key(gw)] = obj
    return observed
