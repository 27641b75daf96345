"""The facts a user relies on once the fleet has settled, and the routing table they see.

Each check returns a list of problems (empty when the fact holds), so the
fleet walk can print all of them and the tests can assert on each.
"""

from collections.abc import Callable
from typing import Any

import grpc
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from e2e import fleetdrills, functions, render
from e2e.driver import (
    Emulation,
    Route,
    cold_start_unhidden,
    labels,
    published_client_cas,
    remote_ref,
    trust_problems,
)
from e2e.fleet import Fleet, Obj, XRKey, describe, key_of
from fleetgate.core import names
from fleetgate.core.constants import CALLER_HEADER, LABEL_ASLEEP
from fleetgate.core.models import LabelSelector
from fleetgate.core.secrets import FILL_POLICIES, is_filler, is_holder
from oracles import secretsearch
from schemas import validate
from sim import catalog, pipeline

AI_GATEWAY = "aigateway.envoyproxy.io/v1beta1"


def _selected(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """The functions' own reading of a selector (an empty one selects everything)."""
    return LabelSelector.model_validate(selector or {}).matches(labels)


def gateways(fleet: Fleet) -> dict[str, Obj]:
    return {k[2]: xr for k, xr in fleet.xrs.items() if k[0] == "InferenceGateway"}


def routes(fleet: Fleet) -> list[Route]:
    """Every AIGatewayRoute the services composed (through their ModelRoutes), resolved."""
    return Emulation(fleet).routes()


def routing_table(fleet: Fleet) -> str:
    """What a caller sees: model → gateway URL → tiers → endpoints; then each deployment
    that scales with demand."""
    scaled = scaled_deployments(fleet)
    return table(routes(fleet)) + ("\nscaled deployments:\n" + scaled if scaled else "")


def scaled_deployments(fleet: Fleet) -> str:
    """Each deployment with ``spec.scaling``: what runs now, and the tier it is of each
    service that routes to it (a sleeping one is parked last; where no tier is left
    the route is a cold start's, answered 503 with Retry-After while it wakes)."""
    lines = []
    for key, xr in sorted(fleet.xrs.items()):
        if key[0] != "ModelDeployment" or not xr["spec"].get("scaling"):
            continue
        status = xr.get("status") or {}
        replicas = status.get("replicas") or {}
        state = (status.get("scaling") or {}).get("state", "unknown")
        tiers = ", ".join(
            f"tier {priority} of {service[1]}/{service[2]}"
            + (
                " (cold start: 503 while its requests wake it)"
                if _cold_start(fleet, service)
                else (" (parked last: the next tier answers)" if state == "Idle" else "")
            )
            for service, priority in _tiers(fleet, key)
        )
        lines.append(
            f"  {key[1]}/{key[2]}  {state}:"
            f" {replicas.get('desired', 0)} replicas asked, {replicas.get('ready', 0)} ready;"
            f" {tiers or 'no service routes to it'}"
        )
    return "\n".join(lines)


def _tiers(fleet: Fleet, deployment: XRKey) -> list[tuple[XRKey, int]]:
    """(service, priority) of every ModelService entry selecting one of the deployment's
    endpoints: the first such entry of each service."""
    published = [
        labels(fleet.xrs[child])
        for child, owner in fleet.owner.items()
        if owner == deployment and child[0] == "ModelEndpoint" and child in fleet.xrs
    ]
    found = []
    for key, service in sorted(fleet.xrs.items()):
        if key[0] != "ModelService" or key[1] != deployment[1]:
            continue
        entries = service["spec"].get("endpoints") or []
        entry = next(
            (e for e in entries if any(_selected(e.get("selector"), x) for x in published)), None
        )
        if entry is not None:
            found.append((key, int(entry.get("priority", 0))))
    return found


def _cold_start(fleet: Fleet, service: XRKey) -> bool:
    return cold_start_unhidden(fleet.xrs.get(service))


def table(found: list[Route]) -> str:
    """The routing table of ``found``, routes however read."""
    lines = []
    for route in found:
        model = f"{route.service[1]}/{route.service[2]}"
        lines.append(f"{model}  via {route.gateway}  {route.url}")
        if route.callers is not None:
            lines.append(f"    callers: {', '.join(route.callers) or '(nobody)'}")
        for limit in route.limits:
            lines.append(f"    limit: {limit}")
        for priority in sorted({b.priority for b in route.backends}):
            tier = [b for b in route.backends if b.priority == priority]
            lines.append(f"    priority {priority}:")
            for b in tier:
                security = (
                    "mTLS" if "clientCertificateRef" in b.tls else ("TLS" if b.tls else "plain")
                )
                extras = [security]
                if b.credential:
                    extras.append("API key")
                if b.removes_caller:
                    extras.append(f"strips {CALLER_HEADER}")
                lines.append(
                    f"      weight {b.weight:<3} https://{b.hostname}:{b.port}{b.prefix}"
                    f"  model={b.model}  [{', '.join(extras)}]"
                )
    return "\n".join(lines)


# --- facts ----------------------------------------------------------------


def check_routes_follow_service_selectors(fleet: Fleet) -> list[str]:
    problems = []
    served = {(r.service, r.gateway) for r in routes(fleet)}
    for key, xr in fleet.xrs.items():
        if key[0] != "ModelService":
            continue
        labels = (xr.get("metadata") or {}).get("labels") or {}
        for gateway, gw in gateways(fleet).items():
            wanted = _selected(gw["spec"].get("serviceSelector"), labels)
            if wanted != ((key, gateway) in served):
                verb = "has no" if wanted else "has a"
                problems.append(f"{describe(key)} {verb} route on gateway {gateway}")
    return problems


def hosting_clusters(fleet: Fleet) -> dict[str, str]:
    """Derived hostname → cluster, for every cluster."""
    return {names.cluster_hostname(k[2]): k[2] for k in fleet.xrs if k[0] == "InferenceCluster"}


def check_backends(fleet: Fleet) -> list[str]:
    """Fleet-hosted endpoints over mutual TLS by derived hostname; third parties over public TLS."""
    problems = []
    clusters = hosting_clusters(fleet)
    for route in routes(fleet):
        where = f"{describe(route.service)} on {route.gateway}"
        if not route.backends:
            problems.append(f"{where}: a route without backends")
        for b in route.backends:
            cluster = clusters.get(b.hostname)
            if cluster is not None:
                want = {
                    "caCertificateRefs": [
                        {
                            "group": "",
                            "kind": "ConfigMap",
                            "name": names.gateway_cluster_ca(route.gateway, cluster),
                        }
                    ],
                    "clientCertificateRef": {
                        "group": "",
                        "kind": "Secret",
                        "name": names.gateway_client_certificate(route.gateway),
                    },
                    "sni": b.hostname,
                }
                if b.tls != want:
                    problems.append(f"{where}: {b.name} to {cluster} is not mutual TLS: {b.tls}")
                if b.removes_caller:
                    problems.append(
                        f"{where}: {b.name} strips the caller header from our own cluster"
                    )
            else:
                if (
                    b.tls.get("wellKnownCACertificates") != "System"
                    or b.tls.get("sni") != b.hostname
                ):
                    problems.append(f"{where}: {b.name} to {b.hostname} is not public TLS: {b.tls}")
                if not b.removes_caller:
                    problems.append(f"{where}: {b.name} discloses the caller to {b.hostname}")
    return problems


def check_cluster_trust(fleet: Fleet) -> list[str]:
    """Each cluster gateway trusts exactly the client CAs the fleet gateways published."""
    return trust_problems(published_client_cas(fleet.xrs), Emulation(fleet).trusted_client_cas())


def check_no_secret_anywhere(fleet: Fleet) -> list[str]:
    text = yaml.safe_dump_all(fleet.everything())
    return [
        f"a Secret value appears in composed state: {v[:6]}…"
        for v in secretsearch.needles(fleet.secrets)
        if v in text
    ]


def check_projections_never_create(fleet: Fleet) -> list[str]:
    """No Object holding Secret references can take provider-kubernetes' create path (which
    saves the values into it), and each such filler has a holder that creates and deletes
    its Secret holding nothing (core/secrets.py)."""
    problems = []
    for (kind, namespace, name), composed in fleet.desired.items():
        held = {remote_ref(o) for o in composed.values() if is_holder(o)}
        for key, obj in composed.items():
            spec = obj.get("spec") or {}
            where = f"{kind} {namespace}/{name}: Object {key}"
            if spec.get("references") and spec.get("managementPolicies") != FILL_POLICIES:
                problems.append(
                    f"{where} has references and may create: {spec.get('managementPolicies')}"
                )
            if is_holder(obj) and spec.get("references"):
                problems.append(f"{where} creates its Secret with references")
            if is_filler(obj) and remote_ref(obj) not in held:
                problems.append(f"{where} fills a Secret nothing holds")
    return problems


def check_schemas(fleet: Fleet) -> list[str]:
    """Every XR against its XRD; every desired composed object against the pinned CRDs."""
    objects = [*fleet.xrs.values(), *(o for d in fleet.desired.values() for o in d.values())]
    return validate.validate(
        [strip_status(o) for o in objects], extra_schema_files=render.schema_files()
    )


def strip_status(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "status"}


SCHEMAS = {"every object validates against its schema": check_schemas}

FACTS = {
    "routes follow service selectors": check_routes_follow_service_selectors,
    "backends: mutual TLS to clusters, public TLS to providers": check_backends,
    "cluster gateways trust exactly the published gateway CAs": check_cluster_trust,
    "no Secret value in any composed resource or status": check_no_secret_anywhere,
    "no Object with Secret references can create its Secret": check_projections_never_create,
}


# --- failure drills -------------------------------------------------------
# Each changes the fleet the way an operator or an outage would, lets it
# settle, and returns what went wrong. They run in order on one fleet.


def call_unresolved(
    fleet: Fleet, key: XRKey, unresolved_kind: str | None
) -> fnv1.RunFunctionResponse:
    """Call ``key``'s function over gRPC as Crossplane does, leaving requirements unresolved.

    With ``unresolved_kind`` None nothing is resolved (the first call of every
    reconcile); otherwise every requirement is resolved from the fleet except
    those asking for that kind.
    """
    target = functions.development_targets()[catalog.registry()[key[0]].name]
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="drill"))
    req.observed.composite.resource.update(fleet.xrs[key])
    for name, obj in fleet.composed.get(key, {}).items():
        req.observed.resources[name].resource.update(obj)
    with grpc.insecure_channel(target) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)  # type: ignore[no-untyped-call]
        rsp: fnv1.RunFunctionResponse = stub.RunFunction(req, timeout=60)
        if unresolved_kind is None:
            return rsp
        everything = [*fleet.xrs.values(), *fleet.secrets]
        for name, selector in rsp.requirements.resources.items():
            if selector.kind == unresolved_kind:
                continue
            resolved = req.required_resources[name]
            for obj in everything:
                if pipeline.selects(selector, obj):
                    resolved.items.add().resource.update(obj)
        rsp = stub.RunFunction(req, timeout=60)
    return rsp


def _dropped(fleet: Fleet, unresolved_kind: str | None) -> list[str]:
    problems = []
    for key in fleet.ordered():
        rsp = call_unresolved(fleet, key, unresolved_kind)
        fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        dropped = sorted(set(fleet.desired.get(key, {})) - set(rsp.desired.resources))
        if fatal:
            problems.append(f"{describe(key)}: fatal {fatal}")
        if dropped:
            problems.append(f"{describe(key)} would delete {dropped}")
    return problems


def drill_nothing_resolved(fleet: Fleet) -> list[str]:
    """The first call of a reconcile (no requirement resolved yet) deletes nothing."""
    return _dropped(fleet, None)


def drill_cluster_unresolvable(fleet: Fleet) -> list[str]:
    """With every InferenceCluster requirement unresolved, nothing composed earlier is deleted."""
    return _dropped(fleet, "InferenceCluster")


def drill_credential_deleted(
    fleet: Fleet, namespace: str = "team-a", name: str = "openai"
) -> list[str]:
    """Without its credential the fallback leaves the route, with a warning; the route stays.
    The credential back, the fallback rejoins (the fleet is left as the next drill expects)."""
    [saved] = [s for s in fleet.secrets if key_of(s)[1:] == (namespace, name)]
    fleet.delete_secret(namespace, name)
    fleet.converge()
    problems = []
    service: XRKey = ("ModelService", namespace, "chat")
    chat = [r for r in routes(fleet) if r.service == service]
    if not chat:
        problems.append("the chat routes disappeared with the fallback's credential")
    for route in chat:
        if any(b.hostname == "api.openai.com" for b in route.backends):
            problems.append(f"chat on {route.gateway} still routes to the provider")
    warnings = [r.get("message", "") for r in fleet.results.get(service, [])]
    if not any("openai" in w for w in warnings):
        problems.append(f"no warning names the left-out endpoint: {warnings}")
    fleet.apply(saved)
    fleet.converge()
    for route in (r for r in routes(fleet) if r.service == service):
        if not any(b.hostname == "api.openai.com" for b in route.backends):
            problems.append(f"chat on {route.gateway} does not route to the provider again")
    return problems


# The example's GPU model, given room to sleep on clusters whose gateways' demand a
# Prometheus keeps.
SLEEPER: XRKey = ("ModelDeployment", "team-a", "qwen3-8b")
SLEEPING = {"minReplicas": 0, "maxReplicas": 2, "idleAfter": "10m"}
PROMETHEUS = "http://prometheus.monitoring.svc:9090"


def scale_to_zero(fleet: Fleet, show: Callable[[str], object] = lambda _: None) -> list[str]:
    """An idle deployment that may sleep: KEDA scales its engines to zero; its endpoints
    stay published, marked asleep; a service with another tier parks them on its last
    priority (the fallback serves at once), one without routes them for a cold start; the
    deployment is Ready, ScaledToZero. ``show`` is given the routing table while it
    sleeps. Undone, it runs as applied again."""
    driver = Emulation(fleet)
    clusters = [k for k in fleet.xrs if k[0] == "InferenceCluster"]
    for key in clusters:
        driver.patch_spec(key, {"stack": {"metrics": {"prometheusAddress": PROMETHEUS}}})
    driver.patch_spec(SLEEPER, {"scaling": SLEEPING})
    fleet.converge()
    fleet.world.idle = {
        f"{m['metadata']['namespace']}/{m['metadata']['name']}"
        for m in fleet.remote(SLEEPER)
        if m["kind"] == "ScaledObject"
    }
    problems = [] if fleet.world.idle else [f"{describe(SLEEPER)} composed no ScaledObject"]
    problems += driver.settle(f"{describe(SLEEPER)} asleep", lambda: _asleep(fleet))
    show(routing_table(fleet))
    fleet.world.idle = set()
    driver.patch_spec(SLEEPER, {"scaling": None})
    for key in clusters:
        driver.patch_spec(key, {"stack": {"metrics": None}})
    return problems + driver.settle(f"{describe(SLEEPER)} as applied", lambda: _awake(fleet))


def _asleep(fleet: Fleet) -> list[str]:
    status = fleet.xrs[SLEEPER].get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    problems = []
    if (status.get("scaling") or {}).get("state") != "Idle" or status.get("replicas", {}).get(
        "desired"
    ):
        problems.append(f"{describe(SLEEPER)}: {status.get('scaling')}, {status.get('replicas')}")
    if conditions.get("ScaledToZero") != "True" or conditions.get("Ready") != "True":
        problems.append(f"{describe(SLEEPER)} is not Ready and ScaledToZero: {conditions}")
    endpoints = [k for k, owner in fleet.owner.items() if owner == SLEEPER]
    awake = [k[2] for k in endpoints if LABEL_ASLEEP not in labels(fleet.xrs.get(k))]
    if not endpoints or awake:
        problems.append(f"endpoints not published asleep: {awake or 'none published'}")
    served = f"{SLEEPER[1]}/{SLEEPER[2]}"
    for route in routes(fleet):
        alone = route.service[2] == "chat-internal"
        parked = route.tried_first(served) if alone else route.tried_after(served)
        if not parked or _cold_start(fleet, route.service) != alone:
            levels = [(b.model, b.priority) for b in route.backends]
            problems.append(
                f"{describe(route.service)} on {route.gateway}: the sleeping {served} not "
                f"{'alone' if alone else 'parked last'} ({levels}), cold start: "
                f"{_cold_start(fleet, route.service)}"
            )
    return problems


def _awake(fleet: Fleet) -> list[str]:
    status = fleet.xrs[SLEEPER].get("status") or {}
    if "scaling" in status or any(
        _cold_start(fleet, k) for k in fleet.xrs if k[0] == "ModelService"
    ):
        return [f"{describe(SLEEPER)} still scales: {status.get('scaling')}"]
    return []


def on_emulation(drill: fleetdrills.Drill) -> Callable[[Fleet], list[str]]:
    """A shared drill (e2e/fleetdrills.py), run on the offline walk's fleet."""
    return lambda fleet: drill(Emulation(fleet))


# The offline walk's own drills first, then every shared one by its name.
DRILLS = {
    "first call of a reconcile (nothing resolved): nothing deleted": drill_nothing_resolved,
    "InferenceClusters unresolvable: nothing composed earlier is deleted": (
        drill_cluster_unresolvable
    ),
    "a deleted credential takes the fallback out of the route, with a warning": (
        drill_credential_deleted
    ),
    **{title: on_emulation(drill) for title, drill in fleetdrills.DRILLS.items()},
}
