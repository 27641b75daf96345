"""What Envoy Gateway makes of a workload cluster: its own translator, run offline.

``egctl experimental translate`` (Envoy Gateway's CLI, pinned in
``tools/egctl/go.mod``) runs the same Gateway API → IR → xDS translation the
Envoy Gateway controller runs, on a file of resources, and prints every
resource with the status Envoy Gateway would write (Accepted, ResolvedRefs,
Programmed on Gateways, listeners, routes and policies) and the xDS each
Gateway's Envoy would run. It exits 0 whatever it rejects: read the
conditions.

This module builds that file for one workload cluster of a settled fleet
walk: the manifests every XR composed onto the cluster (unwrapped from their
provider-kubernetes Objects, Secret keys patched in from the control plane
as provider-kubernetes would), plus what the cluster itself holds and no XR
composes:

* a GatewayClass of Envoy Gateway's controller for every class name used;
* the TLS Secrets cert-manager would issue for each Certificate, made here
  with ``cryptography`` and chaining to the very CAs the walk published
  through trust-manager (so a Backend's CA ConfigMap validates the cluster
  gateway's serving certificate, and a cluster gateway's client CA bundle
  validates a fleet gateway's client certificate);
* for a user-supplied TLS Secret (projected from the control plane) a
  certificate for the listener hostnames that serve it;
* the HTTPRoute and HTTPRouteFilters Envoy AI Gateway's controller generates
  for each AIGatewayRoute (``ai_gateway_route``).

What AI Gateway's extension server changes in xDS afterwards (endpoint
priorities, its ext_proc filters) is not run here: the translator has no
extension server. ``ai_gateway_priorities`` reproduces the one part the
tests assert on.
"""

import base64
import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import functions
from e2e.fleet import Fleet, Obj, placed
from sim.controllers import patched
from sim.pki import KeyPair, ca, leaf
from tools import pinned

REPO = functions.REPO
TOOLS_GO_MOD = REPO / "tools" / "egctl" / "go.mod"
TRANSLATE_TIMEOUT_S = 120
# Envoy Gateway's controller name (api/v1alpha1/shared_types.go, GatewayControllerName).
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
# Kinds egctl loads (internal/gatewayapi/resource/load.go at v1.8.3, the switch from
# line 160); anything else it refuses (not in its scheme) or ignores.
LOADABLE = frozenset(
    {
        "Backend",
        "BackendTLSPolicy",
        "BackendTrafficPolicy",
        "ClientTrafficPolicy",
        "ConfigMap",
        "EnvoyExtensionPolicy",
        "EnvoyPatchPolicy",
        "EnvoyProxy",
        "GRPCRoute",
        "Gateway",
        "GatewayClass",
        "HTTPRoute",
        "HTTPRouteFilter",
        "Namespace",
        "ReferenceGrant",
        "Secret",
        "SecurityPolicy",
        "Service",
        "TCPRoute",
        "TLSRoute",
        "UDPRoute",
    }
)
GATEWAY_API = "gateway.networking.k8s.io"
ENVOY_GATEWAY = "gateway.envoyproxy.io"


def egctl() -> Path:
    """The pinned egctl (``make egctl``), Envoy Gateway's own translator."""
    return pinned.binary("egctl", TOOLS_GO_MOD, "github.com/envoyproxy/gateway")


# --- what a workload cluster holds ------------------------------------------------


def _manifest(obj: Obj) -> Obj | None:
    """The remote object an Object put on its cluster, as the cluster holds it.

    Observed-only objects (trust-manager's ConfigMaps) hold what their
    controller wrote, which only the Object's status carries.
    """
    desired = placed(obj)
    if desired is None:
        return None
    if obj["spec"].get("managementPolicies") == ["Observe"]:
        observed = ((obj.get("status") or {}).get("atProvider") or {}).get("manifest")
        desired = observed or desired
    return {k: v for k, v in copy.deepcopy(desired).items() if k != "status"}


def cluster_objects(fleet: Fleet) -> dict[str, list[Obj]]:
    """Every remote manifest of the fleet, by the provider config of its cluster."""
    found: dict[str, list[Obj]] = {}
    for resources in fleet.composed.values():
        for obj in resources.values():
            manifest = _manifest(obj)
            if manifest is None:
                continue
            manifest = patched(manifest, obj["spec"].get("references") or [], fleet.secrets)
            pc = obj["spec"]["providerConfigRef"]["name"]
            found.setdefault(pc, []).append(manifest)
    return found


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _namespace(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


def _of(objects: Iterable[Obj], kind: str) -> Iterator[Obj]:
    return (o for o in objects if o.get("kind") == kind)


def gateway_classes(objects: list[Obj]) -> list[Obj]:
    """The GatewayClasses the cluster's Gateways name, all Envoy Gateway's."""
    names = sorted({str(g["spec"]["gatewayClassName"]) for g in _of(objects, "Gateway")})
    return [
        {
            "apiVersion": f"{GATEWAY_API}/v1",
            "kind": "GatewayClass",
            "metadata": {"name": name},
            "spec": {"controllerName": CONTROLLER_NAME},
        }
        for name in names
    ]


def _tls_secret(name: str, namespace: str, pair: KeyPair) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/tls",
        "data": _tls_data(pair),
    }


def _tls_data(pair: KeyPair) -> dict[str, str]:
    """``data`` as the API server stores it (egctl reads ``data`` only, never ``stringData``)."""
    return {
        "tls.crt": base64.b64encode(pair.cert_pem).decode(),
        "tls.key": base64.b64encode(pair.key_pem).decode(),
    }


@dataclass
class Issuance:
    """Certificates issued on one cluster: cert-manager's, and the public ones users bring.

    ``ca_for`` gives the CA key pair behind a trust-manager Bundle (by name):
    the fleet walk's own, so what it published validates what is issued here.
    """

    ca_for: Callable[[str], KeyPair]
    public_ca: KeyPair = field(default_factory=lambda: ca("a public CA of the translation"))

    def ca_behind(self, objects: list[Obj], issuer: str, namespace: str) -> KeyPair | None:
        """The CA key pair a CA Issuer signs with: the one trust-manager published for it."""
        found = next(
            (i for i in _of(objects, "Issuer") if (_name(i), _namespace(i)) == (issuer, namespace)),
            None,
        )
        secret = (((found or {}).get("spec") or {}).get("ca") or {}).get("secretName")
        for bundle in _of(objects, "Bundle"):
            sources = (bundle.get("spec") or {}).get("sources") or []
            if any((s.get("secret") or {}).get("name") == secret for s in sources):
                return self.ca_for(_name(bundle))
        return None

    def cert_manager(self, objects: list[Obj]) -> list[Obj]:
        """The Secret of every leaf Certificate, signed by its Issuer's CA (CAs themselves excluded:
        their Secrets hold private keys nothing here reads)."""
        out = []
        for cert in _of(objects, "Certificate"):
            spec = cert.get("spec") or {}
            if spec.get("isCA"):
                continue
            issuer = self.ca_behind(objects, spec["issuerRef"]["name"], _namespace(cert))
            if issuer is None:
                continue
            pair = leaf(
                issuer,
                spec.get("commonName") or _name(cert),
                server="server auth" in (spec.get("usages") or ["server auth"]),
                dns=tuple(spec.get("dnsNames") or ()),
            )
            out.append(_tls_secret(spec["secretName"], _namespace(cert), pair))
        return out

    def user_tls(self, objects: list[Obj]) -> None:
        """Give each projected TLS Secret a certificate for the listener hostnames serving it.

        A composed TLS Secret holds no values (provider-kubernetes patches them
        in on the cluster); the translator parses certificates, so each gets a
        real one (from a public CA of its own) for the names its listeners serve.
        """
        for secret in _of(objects, "Secret"):
            if secret.get("type") != "kubernetes.io/tls":
                continue
            hosts = sorted(
                {
                    str(listener["hostname"])
                    for gw in _of(objects, "Gateway")
                    for listener in gw["spec"].get("listeners") or []
                    if listener.get("hostname")
                    and any(
                        ref.get("name") == _name(secret)
                        for ref in (listener.get("tls") or {}).get("certificateRefs") or []
                    )
                }
            )
            if not hosts:
                continue
            pair = leaf(self.public_ca, hosts[0], server=True, dns=tuple(hosts))
            secret["data"] = _tls_data(pair)


# --- Envoy AI Gateway's controller --------------------------------------------------

# Envoy AI Gateway v1.1.0, internal/controller/ai_gateway_route.go: the filter names
# (lines 35-36, 109-115) and the HTTPRoute it writes (newHTTPRoute, lines 244-372).
HOST_REWRITE_FILTER = "ai-eg-host-rewrite"
NOT_FOUND_FILTER = "ai-eg-route-not-found-response"
# cmd/controller/main.go:214-218: --rootPrefix defaults to "/".
ROOT_PREFIX = "/"
# api/v1beta1/ai_gateway_route_helper.go:17: a rule without a request timeout gets 60s.
DEFAULT_REQUEST_TIMEOUT = "60s"


def ai_gateway_route(route: Obj, objects: list[Obj]) -> list[Obj]:
    """The HTTPRoute (same name and namespace) and two HTTPRouteFilters AI Gateway makes of a route.

    As Envoy AI Gateway v1.1.0's controller does (ai_gateway_route.go):
    parentRefs and hostnames copied (lines 368-370); one HTTPRoute rule per
    AIGatewayRoute rule (254-329), each match its header matches under a path
    prefix of the root prefix, the host-rewrite filter, the rule's timeouts
    (request defaulted to 60s); each backendRef the ``backendRef`` of the
    AIServiceBackend it names, with the backendRef's weight (288-312); then a
    last rule answering 404 for any other model (331-342). The path match has
    no type in upstream's code: the API server defaults it to PathPrefix, as
    here. Priorities are not in the HTTPRoute: AI Gateway's extension server
    sets them on the xDS cluster (see ``ai_gateway_priorities``). A backendRef
    naming an AIServiceBackend that does not exist makes the controller refuse
    the whole route (NotAccepted); here it raises.
    """
    name, namespace = _name(route), _namespace(route)
    services = {(_name(b), _namespace(b)): b for b in _of(objects, "AIServiceBackend")}
    prefix = {"type": "PathPrefix", "value": ROOT_PREFIX}
    rewrite = {
        "type": "ExtensionRef",
        "extensionRef": {
            "group": ENVOY_GATEWAY,
            "kind": "HTTPRouteFilter",
            "name": f"{HOST_REWRITE_FILTER}-{name}",
        },
    }
    rules = []
    for rule in route["spec"].get("rules") or []:
        refs = []
        for ref in rule.get("backendRefs") or []:
            backend_ns = ref.get("namespace", namespace)
            service = services.get((ref["name"], backend_ns))
            if service is None:
                raise LookupError(f"AIServiceBackend {ref['name']}.{backend_ns} not found")
            target = dict(service["spec"]["backendRef"])
            if "weight" in ref:
                target["weight"] = ref["weight"]
            refs.append(target)
        timeouts = dict(rule.get("timeouts") or {})
        timeouts.setdefault("request", DEFAULT_REQUEST_TIMEOUT)
        out: Obj = {
            "backendRefs": refs,
            "matches": [
                {"headers": m["headers"], "path": dict(prefix)}
                for m in rule.get("matches") or []
                if "headers" in m
            ],
            "filters": [copy.deepcopy(rewrite)],
            "timeouts": timeouts,
        }
        if rule.get("name"):
            out["name"] = rule["name"]
        rules.append(out)
    rules.append(
        {
            "name": "route-not-found",
            "matches": [{"path": dict(prefix)}],
            "filters": [
                {
                    "type": "ExtensionRef",
                    "extensionRef": {
                        "group": ENVOY_GATEWAY,
                        "kind": "HTTPRouteFilter",
                        "name": f"{NOT_FOUND_FILTER}-{name}",
                    },
                }
            ],
        }
    )
    spec: Obj = {"parentRefs": copy.deepcopy(route["spec"]["parentRefs"]), "rules": rules}
    if route["spec"].get("hostnames"):
        spec["hostnames"] = list(route["spec"]["hostnames"])
    meta = {"name": name, "namespace": namespace}
    filters = [
        {
            "apiVersion": f"{ENVOY_GATEWAY}/v1alpha1",
            "kind": "HTTPRouteFilter",
            "metadata": {"name": f"{HOST_REWRITE_FILTER}-{name}", "namespace": namespace},
            "spec": {"urlRewrite": {"hostname": {"type": "Backend"}}},
        },
        {
            "apiVersion": f"{ENVOY_GATEWAY}/v1alpha1",
            "kind": "HTTPRouteFilter",
            "metadata": {"name": f"{NOT_FOUND_FILTER}-{name}", "namespace": namespace},
            "spec": {
                "directResponse": {
                    "statusCode": 404,
                    "body": {
                        "type": "Inline",
                        "inline": "No matching route found. It is likely because the model "
                        "specified in your request is not configured in the Gateway.",
                    },
                }
            },
        },
    ]
    http_route = {"apiVersion": f"{GATEWAY_API}/v1", "kind": "HTTPRoute", "metadata": meta}
    return [{**http_route, "spec": spec}, *filters]


def allocate_cluster_ips(objects: list[Obj]) -> None:
    """Give every ClusterIP Service the address the API server would allocate it.

    With endpoint routing off (as egctl translates) Envoy Gateway dials a
    Service by its cluster IP; without one its cluster fails xDS validation.
    """
    for service in _of(objects, "Service"):
        spec = service.setdefault("spec", {})
        if spec.get("type", "ClusterIP") == "ClusterIP" and not spec.get("clusterIP"):
            digest = hashlib.sha256(f"{_namespace(service)}/{_name(service)}".encode()).digest()
            spec["clusterIP"] = f"10.96.{digest[0]}.{digest[1] % 250 + 2}"


def cluster_input(fleet: Fleet, provider_config: str, objects: list[Obj]) -> list[Obj]:
    """What Envoy Gateway on the cluster sees: loadable kinds, issued Secrets, generated routes."""
    return holdings(Issuance(lambda bundle: fleet.world.ca_for(provider_config, bundle)), objects)


def example_input(rendered: list[Obj], secrets: list[Obj]) -> list[Obj]:
    """What one rendered example puts on its cluster, with fresh CAs behind its Bundles."""
    cas: dict[str, KeyPair] = {}
    issuance = Issuance(lambda bundle: cas.setdefault(bundle, ca(bundle[:64])))
    objects = []
    for obj in rendered:
        manifest = _manifest(obj)
        if manifest is not None:
            objects.append(patched(manifest, obj["spec"].get("references") or [], secrets))
    return holdings(issuance, objects)


def holdings(issuance: Issuance, objects: list[Obj]) -> list[Obj]:
    """The objects, plus what the cluster holds that no XR composed."""
    held = [copy.deepcopy(o) for o in objects]
    issuance.user_tls(held)
    allocate_cluster_ips(held)
    generated = [o for r in _of(held, "AIGatewayRoute") for o in ai_gateway_route(r, held)]
    # What the ModelRoute observes of AI Gateway's HTTPRoute is replaced by the route itself.
    made = {(o["kind"], _name(o), _namespace(o)) for o in generated}
    held = [o for o in held if (o.get("kind"), _name(o), _namespace(o)) not in made]
    issued = issuance.cert_manager(held)
    return [
        *gateway_classes(held),
        *(o for o in held if o.get("kind") in LOADABLE),
        *issued,
        *generated,
    ]


# --- running the translator ----------------------------------------------------------


@dataclass(frozen=True)
class Translation:
    """egctl's answer: resources with status (by kind list), and the xDS per Gateway."""

    resources: dict[str, Any]
    xds: dict[str, Any]

    def objects(self, kind_list: str) -> list[Obj]:
        return list(self.resources.get(kind_list) or [])

    def named(self, kind_list: str, name: str) -> Obj:
        for obj in self.objects(kind_list):
            if _name(obj) == name:
                return obj
        raise KeyError(f"{kind_list} {name} not in the translation")

    def config(self, gateway: str, namespace: str, type_suffix: str) -> list[Obj]:
        """The config-dump entries of one Gateway's Envoy whose @type ends with ``type_suffix``."""
        dump = self.xds.get(f"{namespace}/{gateway}") or {}
        return [
            c for c in dump.get("configs") or [] if str(c.get("@type", "")).endswith(type_suffix)
        ]

    def _entries(self, gateway: str, namespace: str, dump: str, field: str) -> list[Obj]:
        """One kind of xDS resource of a Gateway's Envoy, dynamic and static, from its dump."""
        found = []
        for entry in self.config(gateway, namespace, dump):
            for group in entry.values():
                for item in group if isinstance(group, list) else []:
                    resource = (item.get("activeState") or {}).get(field) or item.get(field)
                    if resource:
                        found.append(resource)
        return found

    def listeners(self, gateway: str, namespace: str) -> list[Obj]:
        return self._entries(gateway, namespace, "ListenersConfigDump", "listener")

    def clusters(self, gateway: str, namespace: str) -> list[Obj]:
        return self._entries(gateway, namespace, "ClustersConfigDump", "cluster")

    def route_configs(self, gateway: str, namespace: str) -> list[Obj]:
        return self._entries(gateway, namespace, "RoutesConfigDump", "routeConfig")


def translate(objects: list[Obj], workdir: Path) -> Translation:
    """Run egctl over ``objects``; its statuses and xDS, parsed."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "resources.yaml"
    source.write_text(yaml.safe_dump_all(objects))
    out = pinned.run(
        [
            str(egctl()),
            "experimental",
            "translate",
            "--from",
            "gateway-api",
            "--to",
            "gateway-api,xds",
            "--type",
            "all",
            "--output",
            "json",
            "--file",
            str(source),
        ],
        what="egctl translate",
        timeout=TRANSLATE_TIMEOUT_S,
    )
    answer = json.loads(out)
    (workdir / "translation.json").write_text(json.dumps(answer, indent=1, sort_keys=True))
    xds = answer.pop("xds", None) or {}
    return Translation(answer, xds)
