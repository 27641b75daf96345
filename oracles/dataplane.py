"""What the settled fleet's data plane does, as Envoy Gateway's own translator says.

Every workload cluster of a walked fleet goes through ``egctl experimental
translate`` (``oracles.translate``); each check here reads its answer (the
statuses Envoy Gateway writes and the xDS it generates) and returns a list of
problems, empty when the fact holds, like ``e2e.fleetcheck``.
"""

import copy
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.fleet import Fleet, Obj
from fleetgate.core import names
from fleetgate.core.answers import MODEL_ASKED
from fleetgate.core.constants import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    GATEWAY_HEADER,
    SYSTEM_NAMESPACE,
    TIER_HEADER,
)
from fleetgate.core.governance import caller_pattern
from fleetgate.inference_cluster.stack import USAGE_RECORD_HEADERS
from fleetgate.inference_gateway.builders import CALLER_ADDRESS_HEADER
from fleetgate.model_service.ai_gateway import OVERPROVISIONING_FACTOR
from oracles import translate
from oracles.translate import Translation

Edit = Callable[[str, list[Obj]], list[Obj]]
TLS_CONTEXT = "envoy.transport_sockets.tls"
RETRY_TRIGGERS = frozenset({"connect-failure", "reset", "refused-stream", "retriable-status-codes"})


@dataclass(frozen=True)
class Cluster:
    """One workload cluster: what was composed onto it, what egctl was given, its answer."""

    provider_config: str
    composed: list[Obj]
    given: list[Obj]
    result: Translation


def translate_fleet(fleet: Fleet, edit: Edit | None = None) -> dict[str, Cluster]:
    """Translate every workload cluster; ``edit`` may change what a cluster holds first (drills)."""
    workdir = Path(tempfile.mkdtemp(prefix="egctl-"))
    out = {}
    for pc, composed in sorted(translate.cluster_objects(fleet).items()):
        given = translate.cluster_input(fleet, pc, composed)
        if edit is not None:
            given = edit(pc, copy.deepcopy(given))
        out[pc] = Cluster(pc, composed, given, translate.translate(given, workdir / pc))
    return out


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _conditions(entry: Obj) -> dict[str, Obj]:
    return {str(c.get("type")): c for c in entry.get("conditions") or []}


def _want(where: str, entry: Obj, *types: str) -> list[str]:
    found = _conditions(entry)
    problems = []
    for type_ in types:
        c = found.get(type_)
        if c is None or c.get("status") != "True":
            why = f"{c.get('reason')}: {c.get('message')}" if c else "absent"
            problems.append(f"{where}: {type_} is not True ({why})")
    return problems


# --- statuses ---------------------------------------------------------------------

POLICY_LISTS = (
    "clientTrafficPolicies",
    "backendTrafficPolicies",
    "securityPolicies",
    "envoyPatchPolicies",
)


def status_problems(cluster: Cluster) -> list[str]:
    """Every listener, route, Backend and policy Accepted (and resolved, and programmed).

    egctl writes no Gateway-level conditions (the controller sets those once
    the Envoy deployment exists): a Gateway is judged by its listeners.
    """
    t = cluster.result
    pc = cluster.provider_config
    problems = []
    for gw in t.objects("gateways"):
        where = f"{pc}: Gateway {_name(gw)}"
        status = gw.get("status") or {}
        if not status.get("listeners"):
            problems.append(f"{where}: no listener translated")
        for listener in status.get("listeners") or []:
            problems += _want(
                f"{where} listener {listener.get('name')}",
                listener,
                "Accepted",
                "ResolvedRefs",
                "Programmed",
            )
    for route in t.objects("httpRoutes"):
        parents = (route.get("status") or {}).get("parents") or []
        if not parents:
            problems.append(f"{pc}: HTTPRoute {_name(route)} attached to no Gateway")
        for parent in parents:
            where = f"{pc}: HTTPRoute {_name(route)} on {parent['parentRef'].get('name')}"
            problems += _want(where, parent, "Accepted", "ResolvedRefs")
    for backend in t.objects("backends"):
        problems += _want(
            f"{pc}: Backend {_name(backend)}", backend.get("status") or {}, "Accepted"
        )
    for kind_list in POLICY_LISTS:
        for policy in t.objects(kind_list):
            ancestors = (policy.get("status") or {}).get("ancestors") or []
            if not ancestors:
                problems.append(f"{pc}: {kind_list} {_name(policy)} applies to nothing")
            for ancestor in ancestors:
                problems += _want(f"{pc}: {kind_list} {_name(policy)}", ancestor, "Accepted")
    return problems


def route_problems(cluster: Cluster, name: str) -> list[str]:
    """The statuses of one HTTPRoute (e.g. the one AI Gateway generates for a model route)."""
    try:
        route = cluster.result.named("httpRoutes", name)
    except KeyError as err:
        return [str(err)]
    problems = []
    for parent in (route.get("status") or {}).get("parents") or []:
        problems += _want(f"HTTPRoute {name}", parent, "Accepted", "ResolvedRefs")
    return problems


# --- the fleet's gateways ---------------------------------------------------------------


@dataclass(frozen=True)
class FleetGateway:
    name: str  # the InferenceGateway
    gateway: str  # its Gateway on the cluster
    provider_config: str
    tls: bool
    spec: dict[str, Any]


def fleet_gateways(fleet: Fleet) -> list[FleetGateway]:
    out = []
    for key, xr in sorted(fleet.xrs.items()):
        if key[0] != "InferenceGateway":
            continue
        cluster = fleet.xrs.get(("InferenceCluster", "", xr["spec"]["clusterName"])) or {}
        pc = ((cluster.get("status") or {}).get("providerConfigRef") or {}).get("name", "")
        out.append(
            FleetGateway(
                key[2], names.fleet_gateway(key[2]), pc, "tls" in xr["spec"], dict(xr["spec"])
            )
        )
    return out


def model_routes(cluster: Cluster, gateway: str) -> list[Obj]:
    """The AIGatewayRoutes on the cluster whose parent is ``gateway``."""
    return [
        r
        for r in cluster.composed
        if r.get("kind") == "AIGatewayRoute"
        and any(p.get("name") == gateway for p in r["spec"].get("parentRefs") or [])
    ]


def _listener_routes(t: Translation, gateway: str) -> dict[str, set[str]]:
    """Listener name → the HTTPRoutes (by name) its route configuration serves."""
    out: dict[str, set[str]] = {}
    for rc in t.route_configs(gateway, SYSTEM_NAMESPACE):
        listener = str(rc["name"]).rsplit("/", 1)[-1]
        served = out.setdefault(listener, set())
        for vh in rc.get("virtualHosts") or []:
            for route in vh.get("routes") or []:
                parts = str(route.get("name", "")).split("/")
                if len(parts) > 2 and parts[0] == "httproute":
                    served.add(parts[2])
    return out


def attachment_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """With TLS, model routes on https only and /healthz alone on http; /healthz everywhere."""
    problems = []
    for gw in fleet_gateways(fleet):
        cluster = clusters[gw.provider_config]
        served = _listener_routes(cluster.result, gw.gateway)
        healthz = names.object_name(gw.gateway, "healthz")
        routes = {_name(r) for r in model_routes(cluster, gw.gateway)}
        model_listener = "https" if gw.tls else "http"
        missing = routes - served.get(model_listener, set())
        if missing:
            problems.append(f"{gw.name}: {model_listener} does not serve {sorted(missing)}")
        if gw.tls and served.get("http", set()) != {healthz}:
            problems.append(
                f"{gw.name}: the plain-HTTP listener serves {sorted(served.get('http', set()))}, "
                f"not {healthz} alone"
            )
        for listener, held in served.items():
            if healthz not in held:
                problems.append(f"{gw.name}: {listener} does not answer /healthz")
    return problems


# --- xDS: listeners -------------------------------------------------------------------


def _chains(listener: Obj) -> list[Obj]:
    return [
        *(listener.get("filterChains") or []),
        *([listener["defaultFilterChain"]] if "defaultFilterChain" in listener else []),
    ]


def _hcm(chain: Obj) -> Obj:
    for f in chain.get("filters") or []:
        if f.get("name") == "envoy.filters.network.http_connection_manager":
            return dict(f.get("typedConfig") or {})
    return {}


def listener(t: Translation, gateway: str, section: str) -> Obj | None:
    return next(
        (
            item
            for item in t.listeners(gateway, SYSTEM_NAMESPACE)
            if item.get("name") == f"{SYSTEM_NAMESPACE}/{gateway}/{section}"
        ),
        None,
    )


def downstream_tls(item: Obj) -> list[Obj]:
    return [
        dict(c["transportSocket"]["typedConfig"])
        for c in _chains(item)
        if (c.get("transportSocket") or {}).get("name") == TLS_CONTEXT
    ]


def listener_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Cluster gateways require client certificates; fleet gateways serve TLS for their name."""
    problems = []
    for pc, cluster in clusters.items():
        item = listener(cluster.result, names.CLUSTER_GATEWAY, "https")
        if item is None:
            problems.append(f"{pc}: the cluster gateway has no https listener in xDS")
            continue
        if [c.get("name") for c in _chains(item)] != [
            f"{SYSTEM_NAMESPACE}/{names.CLUSTER_GATEWAY}/https"
        ]:
            problems.append(f"{pc}: the cluster gateway has other filter chains than https")
        for tls in downstream_tls(item) or [{}]:
            if tls.get("requireClientCertificate") is not True:
                problems.append(f"{pc}: the cluster gateway does not require a client certificate")
            if "validationContextSdsSecretConfig" not in (tls.get("commonTlsContext") or {}):
                problems.append(f"{pc}: the cluster gateway validates no client certificate")
    for gw in fleet_gateways(fleet):
        t = clusters[gw.provider_config].result
        if gw.tls:
            item = listener(t, gw.gateway, "https")
            served = downstream_tls(item) if item else []
            hosts = [
                (c.get("filterChainMatch") or {}).get("serverNames") for c in _chains(item or {})
            ]
            if not served or hosts != [[gw.spec["hostname"]]]:
                problems.append(f"{gw.name}: https is not TLS for {gw.spec['hostname']}: {hosts}")
        plain = listener(t, gw.gateway, "http")
        if plain is None or downstream_tls(plain):
            problems.append(f"{gw.name}: no plain-HTTP listener for health checks")
    return problems


def _bytes(quantity: str) -> int:
    return int(quantity.removesuffix("Mi")) * 1024 * 1024


def _early_mutations(chain: Obj) -> list[Obj]:
    return [
        m
        for ext in _hcm(chain).get("earlyHeaderMutationExtensions") or []
        for m in (ext.get("typedConfig") or {}).get("mutations") or []
    ]


def listener_policy_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Every fleet gateway listener buffers what AI Gateway needs and drops a forged caller header.

    The caller header must go in the HCM's early header mutation: it runs as
    the request arrives, before any HTTP filter (the caller authentication
    among them, which sets the header afterwards). The gateway header, the
    failover metrics' ``fleetgate_gateway`` label, is set there too, over
    whatever a caller sent.
    """
    problems = []
    for gw in fleet_gateways(fleet):
        t = clusters[gw.provider_config].result
        limit = _bytes((gw.spec.get("limits") or {}).get("bufferLimit", "50Mi"))
        for section in ("http", "https") if gw.tls else ("http",):
            item = listener(t, gw.gateway, section) or {}
            where = f"{gw.name}: listener {section}"
            if item.get("perConnectionBufferLimitBytes") != limit:
                problems.append(f"{where} buffers {item.get('perConnectionBufferLimitBytes')}")
            for chain in _chains(item):
                mutations = _early_mutations(chain)
                if CALLER_HEADER not in [m.get("remove") for m in mutations]:
                    problems.append(f"{where} keeps an incoming {CALLER_HEADER}")
                overwrite = {
                    "appendAction": "OVERWRITE_IF_EXISTS_OR_ADD",
                    "header": {"key": GATEWAY_HEADER, "value": gw.name},
                }
                if overwrite not in [m.get("append") for m in mutations]:
                    problems.append(f"{where} does not name the gateway in {GATEWAY_HEADER}")
    for gw, _, route, xds in route_clusters(fleet, clusters):
        limit = _bytes((gw.spec.get("limits") or {}).get("bufferLimit", "50Mi"))
        if xds.get("perConnectionBufferLimitBytes") != limit:
            buffered = xds.get("perConnectionBufferLimitBytes")
            problems.append(f"{gw.name}: route {_name(route)} buffers {buffered}")
    return problems


def address_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """No fleet gateway listener forwards the caller's address to any backend.

    Envoy stamps ``x-envoy-external-address`` on every external request; only
    the route configuration's own ``request_headers_to_remove`` takes it off
    (the patch Fleetgate composes, applied by Envoy Gateway's translator).
    """
    problems = []
    for gw in fleet_gateways(fleet):
        configs = {
            config.get("name"): config
            for config in clusters[gw.provider_config].result.route_configs(
                gw.gateway, SYSTEM_NAMESPACE
            )
        }
        for section in ("http", "https") if gw.tls else ("http",):
            name = f"{SYSTEM_NAMESPACE}/{gw.gateway}/{section}"
            removed = (configs.get(name) or {}).get("requestHeadersToRemove") or []
            if CALLER_ADDRESS_HEADER not in removed:
                problems.append(
                    f"{gw.name}: route configuration {name} forwards the caller's address"
                )
    return problems


def answer_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """No fleet gateway counts an answer by the caller header.

    Envoy evaluates the entries counting a response's tokens or cost once the
    response is done; for a third party the AIServiceBackend's header mutation
    has removed x-fleetgate-caller by then, so such an entry would count
    nothing (``governance.answer_reads``).
    """
    problems = []
    for gw in fleet_gateways(fleet):
        configs = clusters[gw.provider_config].result.route_configs(gw.gateway, SYSTEM_NAMESPACE)
        for config in configs:
            for host in config.get("virtualHosts") or []:
                for route in host.get("routes") or []:
                    problems += [
                        f"{gw.name}: route {route.get('name')} counts answers by the caller "
                        f"header under {name}"
                        for name, filter_config in (route.get("typedPerFilterConfig") or {}).items()
                        if name.startswith(RATE_LIMIT)
                        for limit in filter_config.get("rateLimits") or []
                        if limit.get("applyOnStreamDone")
                        and any(_reads_header(a) for a in limit.get("actions") or [])
                    ]
    return problems


def _reads_header(action: Obj) -> bool:
    """Whether an action reads x-fleetgate-caller (its value, or a match on it)."""
    headers = (action.get("headerValueMatch") or {}).get("headers") or []
    return _reads_caller(action) == "header" or any(h.get("name") == CALLER_HEADER for h in headers)


def usage_record_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Every fleet gateway listener writes the usage record, reading what AI Gateway emits.

    The record's caller and tier are the dynamic-metadata keys the stack tells
    AI Gateway to copy the headers into (its logRequestHeaderAttributes): the
    two ends are configured in different functions, and only the translated
    access log shows they meet.
    """
    wanted = {
        field: f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:{USAGE_RECORD_HEADERS[header]})%"
        for field, header in (("caller", CALLER_HEADER), ("tier", TIER_HEADER))
    }
    problems = []
    for gw in fleet_gateways(fleet):
        t = clusters[gw.provider_config].result
        for section in ("http", "https") if gw.tls else ("http",):
            for chain in _chains(listener(t, gw.gateway, section) or {}):
                records = [
                    (log.get("typedConfig") or {}).get("logFormat", {}).get("jsonFormat") or {}
                    for log in _hcm(chain).get("accessLog") or []
                    if log.get("name") == "envoy.access_loggers.file"
                ]
                for field, value in wanted.items():
                    if not any(r.get(field) == value for r in records):
                        problems.append(
                            f"{gw.name}: listener {section} logs no {field} from {value}"
                        )
    return problems


# --- xDS: the model routes' clusters ----------------------------------------------------------


def route_cluster(t: Translation, gateway: str, route: str) -> Obj | None:
    """The single xDS cluster Envoy Gateway makes of an AIGatewayRoute's first rule."""
    wanted = f"httproute/{SYSTEM_NAMESPACE}/{route}/rule/0"
    return next((c for c in t.clusters(gateway, SYSTEM_NAMESPACE) if c.get("name") == wanted), None)


def missing_patch_targets(cluster: Cluster, gateway: str) -> list[str]:
    """The xDS clusters the EnvoyPatchPolicies on ``gateway`` patch but the translation lacks.

    Each is what Envoy Gateway's xDS stage names, as ``<type>/<name>``, in the
    policy's ``Programmed=False`` (``ResourceNotFound``) while Accepted stays True
    (v1.8.3 internal/xds/translator/jsonpatch.go:29-36, 99-106, 163-166).
    """
    present = {c.get("name") for c in cluster.result.clusters(gateway, SYSTEM_NAMESPACE)}
    return [
        f"{patch['type']}/{patch['name']}"
        for policy in cluster.composed
        if policy.get("kind") == "EnvoyPatchPolicy"
        and policy["spec"]["targetRef"]["name"] == gateway
        for patch in policy["spec"]["jsonPatches"]
        if patch["type"].endswith(".Cluster") and patch["name"] not in present
    ]


def _locality_backend(locality: Obj) -> str:
    resources = (
        ((locality.get("metadata") or {}).get("filterMetadata") or {}).get("envoy-gateway") or {}
    ).get("resources") or []
    return str(resources[0].get("name", "")) if resources else ""


def ai_gateway_priorities(cluster: Obj, route: Obj, objects: list[Obj]) -> list[tuple[str, int]]:
    """(Backend, priority) per locality, as AI Gateway's extension server sets them.

    Envoy AI Gateway v1.1.0, internal/extensionserver/post_translate_modify.go
    lines 372-392: for a route-level cluster, the n-th LocalityLbEndpoints (in
    backendRef order, skipping weight-0 refs) gets the n-th backendRef's
    priority. Which Backend each locality dials is Envoy Gateway's doing, read
    from the locality's metadata, so a locality order that does not follow the
    backendRefs shows as a priority on the wrong Backend.
    """
    services = {_name(o): o for o in objects if o.get("kind") == "AIServiceBackend"}
    refs = [r for r in route["spec"]["rules"][0]["backendRefs"] if r.get("weight", 1) != 0]
    localities = (cluster.get("loadAssignment") or {}).get("endpoints") or []
    out = []
    for ref, locality in zip(refs, localities, strict=False):
        dialled = _locality_backend(locality)
        wanted = services[ref["name"]]["spec"]["backendRef"]["name"]
        out.append(
            (
                dialled if dialled == wanted else f"{dialled} (not {wanted})",
                int(ref.get("priority", 0)),
            )
        )
    return out


def _upstream_tls(cluster: Obj, locality: Obj) -> Obj:
    """The UpstreamTlsContext Envoy uses for one locality (its transport socket match)."""
    endpoints = locality.get("lbEndpoints") or [{}]
    match = (
        ((endpoints[0].get("metadata") or {}).get("filterMetadata") or {}).get(
            "envoy.transport_socket_match"
        )
        or {}
    ).get("name")
    for candidate in cluster.get("transportSocketMatches") or []:
        if candidate.get("name") == match:
            return dict((candidate.get("transportSocket") or {}).get("typedConfig") or {})
    socket = cluster.get("transportSocket") or {}
    return dict(socket.get("typedConfig") or {}) if socket.get("name") == TLS_CONTEXT else {}


def backend_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """One cluster per model route; per backend TLS, SNI, CA validation, client certificate."""
    hostnames = {names.cluster_hostname(k[2]) for k in fleet.xrs if k[0] == "InferenceCluster"}
    problems = []
    for gw, cluster, route, xds in route_clusters(fleet, clusters):
        where = f"{gw.name}: route {_name(route)}"
        localities = (xds.get("loadAssignment") or {}).get("endpoints") or []
        refs = route["spec"]["rules"][0]["backendRefs"]
        if len(localities) != len(refs):
            problems.append(f"{where}: {len(localities)} localities for {len(refs)} backends")
        backends = {_name(o): o for o in cluster.composed if o.get("kind") == "Backend"}
        for locality in localities:
            backend = backends.get(_locality_backend(locality))
            if backend is None:
                problems.append(f"{where}: a locality dials no Backend of the route")
                continue
            host = backend["spec"]["endpoints"][0]["fqdn"]["hostname"]
            tls = _upstream_tls(xds, locality)
            common = tls.get("commonTlsContext") or {}
            validation = common.get("combinedValidationContext") or {}
            sans = [
                m.get("matcher", {}).get("exact")
                for m in (validation.get("defaultValidationContext") or {}).get(
                    "matchTypedSubjectAltNames"
                )
                or []
            ]
            if tls.get("sni") != host or sans != [host]:
                problems.append(
                    f"{where}: {host} without SNI and name validation: {tls.get('sni')} {sans}"
                )
            if "validationContextSdsSecretConfig" not in validation:
                problems.append(f"{where}: {host}'s certificate is validated against no CA")
            sent = [c.get("name") for c in common.get("tlsCertificateSdsSecretConfigs") or []]
            client = f"{SYSTEM_NAMESPACE}/{names.gateway_client_certificate(gw.name)}"
            if host in hostnames and sent != [client]:
                problems.append(
                    f"{where}: {host} is sent {sent}, not the client certificate {client}"
                )
            if host not in hostnames and sent:
                problems.append(f"{where}: a client certificate is sent to the third party {host}")
    return problems


def route_clusters(
    fleet: Fleet, clusters: dict[str, Cluster]
) -> Iterator[tuple[FleetGateway, Cluster, Obj, Obj]]:
    """(gateway, its cluster, AIGatewayRoute, the route's xDS cluster) for every model route."""
    for gw in fleet_gateways(fleet):
        cluster = clusters[gw.provider_config]
        for route in model_routes(cluster, gw.gateway):
            xds = route_cluster(cluster.result, gw.gateway, _name(route))
            if xds is not None:
                yield gw, cluster, route, xds


def cluster_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Every model route's rule is one xDS cluster (weighted clusters: an unresolved backend)."""
    found = {(gw.name, _name(route)) for gw, _, route, _ in route_clusters(fleet, clusters)}
    return [
        f"{gw.name}: route {_name(route)} is not one cluster (an invalid backend share?)"
        for gw in fleet_gateways(fleet)
        for route in model_routes(clusters[gw.provider_config], gw.gateway)
        if (gw.name, _name(route)) not in found
    ]


def tier_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Each model route's cluster has the overprovisioning factor that makes tiers strict.

    The EnvoyPatchPolicy's JSON patch is applied by Envoy Gateway before AI
    Gateway's extension server runs (internal/xds/translator/translator.go
    lines 162-169 at v1.8.3), which touches the localities only.
    """
    return [
        f"{gw.name}: route {_name(route)} load assignment policy {policy}"
        for gw, _, route, xds in route_clusters(fleet, clusters)
        if (policy := (xds.get("loadAssignment") or {}).get("policy") or {}).get(
            "overprovisioningFactor"
        )
        != OVERPROVISIONING_FACTOR
    ]


def priority_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Each model route's backends land in its cluster with the priorities the route planned."""
    problems = []
    for gw, cluster, route, xds in route_clusters(fleet, clusters):
        services = {_name(o): o for o in cluster.composed if o.get("kind") == "AIServiceBackend"}
        want = [
            (services[r["name"]]["spec"]["backendRef"]["name"], int(r.get("priority", 0)))
            for r in route["spec"]["rules"][0]["backendRefs"]
        ]
        got = ai_gateway_priorities(xds, route, cluster.composed)
        if got != want:
            problems.append(f"{gw.name}: route {_name(route)} priorities {got}, planned {want}")
    return problems


# --- xDS: retries and outlier detection --------------------------------------------------------


def _routes(t: Translation, gateway: str, route: str) -> Iterator[Obj]:
    for _, r in _configured_routes(t, gateway, route):
        yield r


def _configured_routes(t: Translation, gateway: str, route: str) -> Iterator[tuple[str, Obj]]:
    """``route``'s xDS routes, each with its route configuration's name (its listener's)."""
    for rc in t.route_configs(gateway, SYSTEM_NAMESPACE):
        for vh in rc.get("virtualHosts") or []:
            for r in vh.get("routes") or []:
                if str(r.get("name", "")).startswith(
                    f"httproute/{SYSTEM_NAMESPACE}/{route}/rule/0/"
                ):
                    yield str(rc.get("name")), r


def failover_problems(fleet: Fleet, clusters: dict[str, Cluster]) -> list[str]:
    """Retries move across priorities on the gateway's triggers; outliers ejected, no panic mode."""
    problems = []
    for gw, cluster, route, xds in route_clusters(fleet, clusters):
        where = f"{gw.name}: route {_name(route)}"
        failover = gw.spec.get("failover") or {}
        codes = sorted((failover.get("retryOn") or {}).get("httpStatusCodes") or [503])
        outlier = failover.get("outlierDetection") or {}
        for r in _routes(cluster.result, gw.gateway, _name(route)):
            retry = (r.get("route") or {}).get("retryPolicy") or {}
            triggers = set(str(retry.get("retryOn", "")).split(","))
            if not triggers >= RETRY_TRIGGERS:
                problems.append(f"{where}: retries on {sorted(triggers)}")
            if retry.get("numRetries") != failover.get("retries", 3):
                problems.append(f"{where}: {retry.get('numRetries')} retries")
            if sorted(retry.get("retriableStatusCodes") or []) != codes:
                problems.append(f"{where}: retries on status {retry.get('retriableStatusCodes')}")
            priority = retry.get("retryPriority") or {}
            if (
                priority.get("name") != "envoy.retry_priorities.previous_priorities"
                or (priority.get("typedConfig") or {}).get("updateFrequency") != 1
            ):
                problems.append(f"{where}: a retry does not move to the next priority: {priority}")
        detection = xds.get("outlierDetection") or {}
        if (
            detection.get("consecutive5xx") != outlier.get("consecutive5xxErrors", 5)
            or detection.get("baseEjectionTime") != outlier.get("baseEjectionTime", "30s")
            or detection.get("maxEjectionPercent") != 100
        ):
            problems.append(f"{where}: outlier detection {detection}")
        panic = (xds.get("commonLbConfig") or {}).get("healthyPanicThreshold")
        if panic not in ({}, {"value": 0}):
            problems.append(f"{where}: panic threshold {panic}")
    return problems


# --- xDS: who may call a model --------------------------------------------------------------

API_KEY_AUTH = "envoy.filters.http.api_key_auth"
RBAC = "envoy.filters.http.rbac"


def _caller_values(predicate: Obj) -> list[str]:
    """The exact caller-header values a predicate matches: one, or any of several (``orMatcher``).

    Envoy Gateway writes one header's values as a single predicate, or as an
    ``orMatcher`` over them (internal/xds/translator/authorization.go:611-637, v1.8.3).
    """
    single = predicate.get("singlePredicate")
    if single is not None:
        header = ((single.get("input") or {}).get("typedConfig") or {}).get("headerName")
        exact = (single.get("valueMatch") or {}).get("exact")
        return [exact] if header == CALLER_HEADER and exact is not None else []
    either = (predicate.get("orMatcher") or {}).get("predicate") or []
    return [value for p in either for value in _caller_values(p)]


def caller_access_problems(
    t: Translation, gateway: str, route: str, section: str, callers: list[str]
) -> list[str]:
    """Only ``callers`` reach the model route, and only after authentication named them.

    The route's SecurityPolicy must be merged into the gateway's (so the route
    keeps the gateway's API keys) and become a per-route RBAC config allowing
    exactly ``callers`` by the caller header, denying the rest. On the listener
    the RBAC filter must come after API-key authentication (which sets the
    header). Envoy AI Gateway's extension server, absent here, puts its
    ext_proc (which names the model and picks the route) before the first RBAC
    filter (internal/extensionserver/post_translate_modify.go:1084-1130 at
    v1.1.0), so the per-route config is the model's.
    """
    problems = []
    policy = t.named("securityPolicies", route)
    for ancestor in (policy.get("status") or {}).get("ancestors") or [{}]:
        problems += _want(f"SecurityPolicy {route}", ancestor, "Accepted", "Merged")
    filters = [
        f.get("name")
        for chain in _chains(listener(t, gateway, section) or {})
        for f in _hcm(chain).get("httpFilters") or []
    ]
    if API_KEY_AUTH not in filters or RBAC not in filters:
        problems.append(f"{gateway}/{section}: filters {filters}")
    elif filters.index(API_KEY_AUTH) > filters.index(RBAC):
        problems.append(f"{gateway}/{section}: RBAC runs before authentication: {filters}")
    routes = list(_routes(t, gateway, route))
    if not routes:
        problems.append(f"route {route}: not in xDS")
    for r in routes:
        per_route = r.get("typedPerFilterConfig") or {}
        if not (per_route.get(API_KEY_AUTH) or {}).get("credentials"):
            problems.append(f"{r.get('name')}: the gateway's API keys are gone from the route")
        matcher = ((per_route.get(RBAC) or {}).get("rbac") or {}).get("matcher") or {}
        allowed = [
            value
            for m in (matcher.get("matcherList") or {}).get("matchers") or []
            if m["onMatch"]["action"]["typedConfig"]["name"] == "ALLOW"
            for value in _caller_values(m["predicate"])
        ]
        if allowed != callers:
            problems.append(f"{r.get('name')}: allows {allowed}, not {callers}")
        otherwise = ((matcher.get("onNoMatch") or {}).get("action") or {}).get("typedConfig")
        if (otherwise or {}).get("action") != "DENY":
            problems.append(f"{r.get('name')}: a caller not listed is not denied: {otherwise}")
    return problems


# --- xDS: how much each caller may use -----------------------------------------------------

RATE_LIMIT = "envoy.filters.http.ratelimit"


@dataclass(frozen=True)
class Counted:
    """One rate limit Envoy applies on a route, as a caller governance rule reads it."""

    domain: str
    # The caller pattern a narrowed limit matches first (None: every caller).
    pattern: str | None
    # What each request adds: "1" (requests), "0" (checked only) or the metadata
    # key counted as the response ends.
    adds: str
    # Where the caller is read: "header" (x-fleetgate-caller, as the request
    # arrives) or "metadata" (AI Gateway's copy: a third party's header
    # mutation removes the header before the response ends).
    caller_from: str


def _reads_caller(action: Obj) -> str | None:
    """Where an action reads the caller from, if it does."""
    if (action.get("requestHeaders") or {}).get("headerName") == CALLER_HEADER:
        return "header"
    key = (action.get("metadata") or {}).get("metadataKey") or {}
    path = [step.get("key") for step in key.get("path") or []]
    if key.get("key") == AI_GATEWAY_METADATA_NAMESPACE and path == [CALLER_METADATA_KEY]:
        return "metadata"
    return None


def _narrowing(action: Obj) -> str | None:
    """The caller pattern an action matches, if it narrows: a header match's, or the
    members of an answer's CEL narrowing (``governance.answer_reads``) as that pattern."""
    for header in (action.get("headerValueMatch") or {}).get("headers") or []:
        if header.get("name") == CALLER_HEADER:
            return str(header["stringMatch"]["safeRegex"]["regex"])
    config = ((action.get("extension") or {}).get("typedConfig")) or {}
    members = re.search(r" in \[([^\]]*)\]", str(config.get("text", "")))
    return None if members is None else caller_pattern(re.findall(r"'([^']*)'", members[1]))


def route_rate_limits(t: Translation, gateway: str, route: str) -> list[Counted]:
    """The rate limits on ``route``'s xDS routes that count per caller, in order.

    Envoy Gateway puts a route's own rules under the listener's rate-limit
    filter and each shared (Gateway) policy's under a filter of its own, in
    the route's per-filter config; but when the rules include a shared one and
    none has a cost (a gateway limiting requests only), it puts them all on the
    route action instead, for every filter to send under its own domain
    (internal/xds/translator/ratelimit.go:173-203 and 338-358 at v1.8.3): both
    places are read.
    """
    found = []
    for listener, r in _configured_routes(t, gateway, route):
        for name, config in sorted((r.get("typedPerFilterConfig") or {}).items()):
            if name.startswith(RATE_LIMIT):
                domain = str(config["domain"])
                found += [_counted(limit, domain) for limit in config.get("rateLimits") or []]
        for limit in (r.get("route") or {}).get("rateLimits") or []:
            found.append(_counted(limit, _registered_domain(limit, str(r.get("name")), listener)))
    return [counted for counted in found if counted is not None]


def _registered_domain(limit: Obj, route: str, listener: str) -> str:
    """The one domain whose rate-limit service configuration holds a route action's limit.

    Its first action names its rule: the route itself for a route's own rule
    (counted under the listener's domain), else the shared rule's name, whose
    policy's domain is that name less ``/rule/<n>`` (ratelimit.go:259-265,
    279-288 and 1048-1053 at v1.8.3).
    """
    first = ((limit.get("actions") or [{}])[0].get("genericKey")) or {}
    rule = str(first.get("descriptorKey", ""))
    return listener if rule == route else rule.rsplit("/rule/", 1)[0]


def _counted(limit: Obj, domain: str) -> Counted | None:
    """A rate limit as a caller governance rule reads it; None when it is not per caller."""
    actions = limit.get("actions") or []
    reads = [f for f in map(_reads_caller, actions) if f is not None]
    if not reads:
        return None
    patterns = [p for p in map(_narrowing, actions) if p is not None]
    hits = limit.get("hitsAddend") or {}
    adds = str(hits.get("number", "1"))
    if limit.get("applyOnStreamDone"):
        adds = (
            str(hits.get("format", ""))
            .removeprefix(f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:")
            .removesuffix(")%")
        )
    return Counted(domain, patterns[0] if patterns else None, adds, reads[0])


def expected_rate_limits(domain: str, rules: list[Obj]) -> list[Counted]:
    """What ``rules`` (a BackendTrafficPolicy's global rules) must become on a route."""
    expected = []
    for rule in rules:
        headers = rule["clientSelectors"][0]["headers"]
        pattern = next((h["value"] for h in headers if h["type"] == "RegularExpression"), None)
        response = (rule.get("cost") or {}).get("response")
        if response is None:
            expected.append(Counted(domain, pattern, "1", "header"))
        else:
            # Checked as the request arrives, counted as the response ends,
            # for the caller AI Gateway recorded as the request arrived.
            expected.append(Counted(domain, pattern, "0", "header"))
            expected.append(Counted(domain, pattern, response["metadata"]["key"], "metadata"))
    return expected


def rate_limit_problems(
    t: Translation, gateway: str, route: str, section: str, expected: list[Counted]
) -> list[str]:
    """The route counts each caller as ``expected``, after authentication named the caller.

    Every BackendTrafficPolicy must be accepted (the route's merged into the
    gateway's, so retries and outlier detection stay: the other checks say
    so); on the listener every rate-limit filter must come after API-key
    authentication, which sets the caller header the counters are keyed by.
    AI Gateway's extension server, absent here, inserts its ext_proc before
    the first RBAC or rate-limit filter (internal/extensionserver/
    post_translate_modify.go:1084-1130 at v1.1.0), so the model is known too.
    """
    problems = []
    for policy in t.objects("backendTrafficPolicies"):
        for ancestor in (policy.get("status") or {}).get("ancestors") or [{}]:
            problems += _want(f"BackendTrafficPolicy {_name(policy)}", ancestor, "Accepted")
    filters = [
        str(f.get("name"))
        for chain in _chains(listener(t, gateway, section) or {})
        for f in _hcm(chain).get("httpFilters") or []
    ]
    limiting = [i for i, f in enumerate(filters) if f.startswith(RATE_LIMIT)]
    if API_KEY_AUTH not in filters or not limiting:
        problems.append(f"{gateway}/{section}: filters {filters}")
    elif filters.index(API_KEY_AUTH) > min(limiting):
        problems.append(f"{gateway}/{section}: a rate limit runs before authentication: {filters}")
    found = route_rate_limits(t, gateway, route)
    if sorted(found, key=repr) != sorted(expected, key=repr):
        problems.append(f"route {route}: counts {found}, not {expected}")
    return problems


CUSTOM_RESPONSE = "envoy.filters.http.custom_response"


def _local_statuses(matcher: Obj) -> list[str]:
    """The status codes a custom-response matcher replaces, when Envoy itself replied."""
    predicates = ((matcher.get("predicate") or {}).get("andMatcher") or {}).get("predicate") or []
    inputs = {
        str(((p.get("singlePredicate") or {}).get("input") or {}).get("name")): (
            (p.get("singlePredicate") or {}).get("valueMatch") or {}
        ).get("exact")
        for p in predicates
    }
    local = inputs.get("http-response-local-reply-match-input") == "true"
    status = inputs.get("http-response-status-code-match-input")
    return [str(status)] if local and status else []


def refusal_problems(t: Translation, gateway: str, route: str, section: str) -> list[str]:
    """Envoy's own 403, 429 and 503 on the model's route come back as JSON naming the model
    asked for, as Envoy fills it in from the request (``answers.responses``).

    The route enables a custom-response filter of its own (disabled on the
    listener, turned on per route) replacing only local replies (a backend's
    403, 429 or 503 passes untouched: a cluster gateway's 503 must reach AI
    Gateway's upstream processor whole to count as demand for a sleeping
    model), and the filter comes before authentication,
    RBAC and the rate limits in the chain, so their replies pass it on the
    way back (internal/xds/translator/custom_response.go at v1.8.3).
    """
    problems = []
    filters = {
        str(f.get("name")): f
        for chain in _chains(listener(t, gateway, section) or {})
        for f in _hcm(chain).get("httpFilters") or []
    }
    order = list(filters)
    for r in _routes(t, gateway, route):
        enabled = [
            name
            for name in (r.get("typedPerFilterConfig") or {})
            if name.startswith(CUSTOM_RESPONSE)
        ]
        if len(enabled) != 1 or enabled[0] not in filters:
            problems.append(f"{r.get('name')}: custom responses enabled: {enabled}")
            continue
        name = enabled[0]
        later = [f for f in (API_KEY_AUTH, RBAC, RATE_LIMIT) if f in order]
        if any(order.index(name) > order.index(f) for f in later):
            problems.append(f"{gateway}/{section}: {name} misses replies of {later}: {order}")
        matchers = (
            (filters[name].get("typedConfig") or {}).get("customResponseMatcher") or {}
        ).get("matcherList", {}).get("matchers") or []
        bodies = {
            status: m["onMatch"]["action"]["typedConfig"]["bodyFormat"]["textFormat"]
            for m in matchers
            for status in _local_statuses(m)
        }
        if sorted(bodies) != ["403", "429", "503"]:
            problems.append(f"{r.get('name')}: local replies replaced: {sorted(bodies)}")
        for status, body in bodies.items():
            if json.loads(body).get("error", {}).get("model") != MODEL_ASKED:
                problems.append(
                    f"{r.get('name')}: the {status} body does not name the model: {body}"
                )
    return problems


CHECKS = {
    "egctl: every listener, route, Backend and policy accepted and resolved": (
        lambda fleet, clusters: [p for c in clusters.values() for p in status_problems(c)]
    ),
    "egctl: model routes on the listeners they belong to": attachment_problems,
    "egctl: listener TLS (client certificates required on cluster gateways)": listener_problems,
    "egctl: backend TLS (SNI, CA validation, client certificate to clusters)": backend_problems,
    "egctl: listeners buffer long prompts and drop a forged caller header": (
        listener_policy_problems
    ),
    "egctl: every request's usage record names its caller and the tier that served it": (
        usage_record_problems
    ),
    "egctl: no listener forwards the caller's address (x-envoy-external-address)": (
        address_problems
    ),
    "egctl: every answer counts against its caller's token and cost limits": answer_problems,
    "egctl: one cluster per model route": cluster_problems,
    "egctl: each backend in its route's cluster with the priority planned": priority_problems,
    "egctl: strict priority tiers (overprovisioning factor patched in)": tier_problems,
    "egctl: retries across priorities, outlier detection, no panic mode": failover_problems,
}
