"""Hypothesis strategies: well-formed fleets, and ways to break them.

A well-formed input is one the XRDs accept (``apis/*/definition.yaml``):
names, labels, enums and bounds as the API server would let them through,
at and near their limits, with unicode wherever the XRD allows free text.
Worlds are generated whole (clusters, gateways, endpoints, services,
deployments and the Secrets they name) so every function finds something
to read, with statuses anywhere from never reconciled to fully published.

Breaking them (``mutations``) is done by path: a value of the wrong JSON
type, a required field removed, a bound exceeded, a huge or deeply nested
value, a required resource of another kind, a name listed twice.
"""

import ipaddress
import string
from dataclasses import dataclass
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from fleetgate.core import names
from fleetgate.core.constants import SYSTEM_NAMESPACE
from schemas import xrds
from sim import pki
from tests.hardening.harness import Obj, secret, walk, xr

# --- what the XRDs allow ---------------------------------------------------------------
# Enums and bounds are read from the XRDs (``schemas/xrds``), not spelt again here: a value
# the API changes is generated at its new limit without an edit here.
IC, IG, MS, ME, MD = (
    "InferenceCluster",
    "InferenceGateway",
    "ModelService",
    "ModelEndpoint",
    "ModelDeployment",
)
_EJECT_AFTER = "spec.failover.outlierDetection.consecutive5xxErrors"
_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")


def allowed(kind: str, path: str) -> st.SearchStrategy[Any]:
    """Each value the XRD's enum at ``path`` (an ``schemas.xrds.walk`` path) allows."""
    return st.sampled_from(xrds.field(kind, path)["enum"])


def limit(kind: str, path: str) -> int:
    """The XRD's upper bound at ``path``: a number's maximum, a string's, list's or map's
    size."""
    field = xrds.field(kind, path)
    return int(next(field[b] for b in _BOUNDS if b in field))


# --- names and labels ----------------------------------------------------------------

_ALNUM = string.ascii_lowercase + string.digits
# Near-collisions on purpose: derived names must still differ.
NAME_POOL = [
    "a",
    "eu-west",
    "us.east",
    "us-east",
    "us--east",
    "0",
    "x" * 63,
    "y" * 64,
    ".".join(["z" * 63] * 3) + ".abc",  # 195 characters over four labels
    "q" * 253,
]
NAMESPACES = ["team-a", "team-b", "t" * 63]


@st.composite
def dns_label(draw: st.DrawFn, max_size: int = 63) -> str:
    size = draw(st.sampled_from([1, 2, 5, max_size]) | st.integers(1, max_size))
    body = draw(st.text(_ALNUM + "-", min_size=size, max_size=size))
    ends = draw(st.text(_ALNUM, min_size=2, max_size=2))
    label = (ends[0] + body[1:-1] + ends[1])[:size] if size > 1 else ends[0]
    return label


@st.composite
def object_name(draw: st.DrawFn, max_size: int = 253) -> str:
    """A DNS-1123 subdomain name (what every Kubernetes object name is), ≤ 253."""
    if draw(st.booleans()):
        return draw(st.sampled_from([n for n in NAME_POOL if len(n) <= max_size]))
    labels = draw(st.lists(dns_label(), min_size=1, max_size=4))
    return ".".join(labels)[:max_size].rstrip(".-") or "n"


def xr_name() -> st.SearchStrategy[str]:
    """An XR's name: a subdomain name Crossplane also uses as a label value, so ≤ 63."""
    return object_name(63)


def _label_name(max_size: int = 63) -> st.SearchStrategy[str]:
    middle = st.text(string.ascii_letters + string.digits + "-_.", max_size=max_size - 2)
    return st.builds(
        lambda a, m, b: (a + m + b)[: max_size - 1] + b if len(a + m + b) > max_size else a + m + b,
        st.sampled_from(string.ascii_letters + string.digits),
        middle,
        st.sampled_from(string.ascii_letters + string.digits),
    )


label_key = st.one_of(
    _label_name(),
    st.builds(lambda p, n: f"{p}/{n}", st.sampled_from(["example.com", "a.b.c"]), _label_name()),
    st.sampled_from(["region", "tier", "app.kubernetes.io/name"]),
)
label_value = st.one_of(st.just(""), _label_name(), st.sampled_from(["eu", "us", "gpu"]))


def labels(min_size: int = 0, max_size: int = 16) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(label_key, label_value, min_size=min_size, max_size=max_size)


def mostly() -> st.SearchStrategy[bool]:
    """True three times in four; shrinks towards True (the richer case)."""
    return st.sampled_from([True, True, True, False])


MODELS = ["m1", "m2"]


# Free text the XRDs bound only by length: unicode, whitespace and all.
def free_text(max_size: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(min_size=1, max_size=min(max_size, 40)),
        st.just("Ω≈ç√∫µ≤≥÷ 模型 🤖"[:max_size]),
        st.just("m" * max_size),
    )


# --- values the controllers publish ------------------------------------------------

# Real certificates, made once: trust-manager publishes PEMs like these.
PEMS = [pki.ca(f"hardening CA {i}").cert_pem.decode() for i in range(3)]

addresses = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.sampled_from(["lb.example.net", "a1b2.elb.amazonaws.com", "LB.Example.NET"]),
)


def secret_value() -> st.SearchStrategy[str]:
    """A Secret value distinctive enough to search for: nothing else contains it by chance."""
    return st.builds(
        lambda token, tail: f"SV{token}{tail}",
        st.text(string.ascii_letters + string.digits, min_size=10, max_size=10),
        st.sampled_from(["", "==", "\n", "é", "-----END PRIVATE KEY-----\n"]),
    )


# --- XRs ---------------------------------------------------------------------------------

SCHEDULABLE_TRUE = {"type": "Schedulable", "status": "True", "reason": "MutuallyAuthenticated"}


@st.composite
def cluster(draw: st.DrawFn, name: str) -> tuple[Obj, list[Obj]]:
    """An InferenceCluster with any status a reconcile may have left; and its Secrets."""
    secrets: list[Obj] = []
    if draw(st.booleans()):
        secret_name = draw(object_name())
        key = draw(st.sampled_from(["kubeconfig", "config", "a.b_c-d"]))
        credentials: Obj = {"secretRef": {"name": secret_name, "key": key}}
        if key == "kubeconfig" and draw(st.booleans()):
            del credentials["secretRef"]["key"]
        secrets.append(secret(secret_name, SYSTEM_NAMESPACE, {key: draw(secret_value())}))
    else:
        credentials = {"providerConfigName": draw(object_name())}
    spec: Obj = {"credentials": credentials}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "placement": st.builds(lambda ls: {"metadata": {"labels": ls}}, labels()),
        "capacity": st.fixed_dictionaries(
            {"gpus": st.sampled_from([8, 0, 1, limit(IC, "spec.capacity.gpus")])},
            optional={
                "gpuType": st.sampled_from(
                    ["nvidia-h100", "g" * limit(IC, "spec.capacity.gpuType")]
                )
            },
        ),
        "providers": st.just(["Direct", "LLMD"])
        | st.lists(
            allowed(IC, "spec.providers[]"),
            min_size=1,
            max_size=limit(IC, "spec.providers"),
            unique=True,
        ),
        "gateway": st.builds(lambda n: {"className": n}, object_name()),
        "stack": st.builds(lambda b: {"install": b}, st.booleans()),
        "schedulable": st.booleans(),
    }
    for field, strategy in optional.items():
        if draw(mostly() if field in {"capacity", "providers"} else st.booleans()):
            spec[field] = draw(strategy)
    obj = xr("InferenceCluster", name, spec)
    if draw(st.booleans()):
        obj["metadata"]["labels"] = draw(labels(max_size=4))
    obj["status"] = draw(cluster_status(name, spec))
    return obj, secrets


@st.composite
def cluster_status(draw: st.DrawFn, name: str, spec: Obj) -> Obj:
    # Mostly published: that is where the other functions have most to do.
    stage = draw(st.sampled_from(["published", "published", "none", "registered", "addressed"]))
    if stage == "none":
        return {}
    pc = spec["credentials"].get("providerConfigName") or names.object_name(
        "fleetgate-cluster", name
    )
    status: Obj = {"providerConfigRef": {"name": pc}}
    if stage == "registered":
        return status
    gateway: Obj = {"address": draw(addresses)}
    if draw(st.booleans()):
        gateway["caCertificate"] = draw(st.sampled_from(PEMS))
    if stage == "published":
        gateway["caCertificate"] = draw(st.sampled_from(PEMS))
        gateway["hostname"] = names.cluster_hostname(name)
        status["conditions"] = [SCHEDULABLE_TRUE]
    status["gateway"] = gateway
    return status


DURATIONS = st.sampled_from(["1s", "300s", "1m30s", "500ms", "99999h", "1h1m1s1ms"])


@st.composite
def hostname(draw: st.DrawFn) -> str:
    """A bare DNS name whose last label is not numeric (the XRD's two rules)."""
    labels_ = draw(st.lists(dns_label(), min_size=1, max_size=3))
    last = draw(st.sampled_from(["com", "net", "example", "a-1"]))
    return ".".join([*labels_, last])[-253:].lstrip(".-") or "a.com"


@st.composite
def gateway(draw: st.DrawFn, name: str, cluster_names: list[str]) -> tuple[Obj, list[Obj]]:
    """An InferenceGateway on one of the clusters (or a missing one), with its Secrets."""
    secrets: list[Obj] = []
    spec: Obj = {"clusterName": draw(st.sampled_from([*cluster_names, *cluster_names, "nowhere"]))}
    if draw(st.booleans()):
        spec["hostname"] = draw(hostname())
        if draw(st.booleans()):
            refs = draw(st.lists(object_name(), min_size=1, max_size=8, unique=True))
            spec["tls"] = {"certificateRefs": [{"name": r} for r in refs]}
            for ref in refs:
                if draw(st.integers(0, 9)) > 0:  # now and then a TLS Secret is missing
                    keys = ["tls.crt", "tls.key"] if draw(st.integers(0, 9)) else ["tls.crt"]
                    data = {k: draw(secret_value()) for k in keys}
                    secrets.append(secret(ref, SYSTEM_NAMESPACE, data))
    if draw(st.booleans()):
        selector = draw(labels(min_size=1, max_size=16))
        spec["auth"] = {"secretSelector": {"matchLabels": selector}}
        for i in range(draw(st.sampled_from([1, 2, 0, 3]))):
            callers = draw(
                st.dictionaries(
                    st.sampled_from(["team-a", "team-b", "c" * 253, "svc.x_y-z"]),
                    secret_value(),
                    max_size=4,
                )
            )
            secrets.append(
                secret(f"callers-{name[:40]}-{i}", SYSTEM_NAMESPACE, callers, labels=selector)
            )
    if draw(st.booleans()):
        spec["serviceSelector"] = {"matchLabels": draw(labels(max_size=3))}
    if draw(st.booleans()):
        spec["failover"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "retries": st.integers(0, limit(IG, "spec.failover.retries")),
                    "retryOn": st.builds(
                        lambda codes: {"httpStatusCodes": codes},
                        st.lists(
                            st.integers(100, 599),
                            max_size=limit(IG, "spec.failover.retryOn.httpStatusCodes"),
                            unique=True,
                        ),
                    ),
                    "requestTimeout": DURATIONS,
                    "streamIdleTimeout": DURATIONS,
                    "outlierDetection": st.fixed_dictionaries(
                        {},
                        optional={
                            "consecutive5xxErrors": st.integers(1, limit(IG, _EJECT_AFTER)),
                            "baseEjectionTime": DURATIONS,
                        },
                    ),
                },
            )
        )
    obj = xr("InferenceGateway", name, spec)
    obj["metadata"]["creationTimestamp"] = draw(
        st.sampled_from(["2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", ""])
    )
    status: Obj = {}
    if draw(mostly()):
        status["clientCACertificate"] = draw(st.sampled_from(PEMS))
        status["endpoints"] = {"openAI": f"http://{name[:40]}.example/v1"}
        # The clusters it reaches over mutual TLS: mostly all, sometimes some.
        every = sorted(set(cluster_names))
        reachable = st.lists(st.sampled_from(every), unique=True) if every else st.just([])
        status["reachableClusters"] = every if draw(mostly()) else sorted(draw(reachable))
    obj["status"] = status
    return obj, secrets


@st.composite
def origin(draw: st.DrawFn, hosted_by: list[str]) -> str:
    hosted = bool(hosted_by) and draw(st.booleans())
    if hosted:
        return f"https://{names.cluster_hostname(draw(st.sampled_from(hosted_by)))}"
    scheme = draw(st.sampled_from(["https", "http"]))
    port = draw(st.sampled_from(["", ":1", ":8443", ":65535"]))
    return f"{scheme}://{draw(hostname())}{port}"


@st.composite
def endpoint(
    draw: st.DrawFn, name: str, namespace: str, cluster_names: list[str]
) -> tuple[Obj, list[Obj]]:
    """A ModelEndpoint (third party or fleet-hosted), its credential and a readiness."""
    secrets: list[Obj] = []
    hosted = bool(cluster_names) and draw(st.booleans())
    spec: Obj = {"origin": draw(origin(cluster_names if hosted else []))}
    if draw(st.booleans()):
        spec["api"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "schema": allowed(ME, "spec.api.schema"),
                    "prefix": st.sampled_from(["/v1", "/", f"/{namespace}/{name}/v1", "/é/ü"]),
                },
            )
        )
    if draw(st.booleans()):
        spec["model"] = draw(free_text(limit(ME, "spec.model")))
    if draw(st.booleans()):
        key = draw(st.sampled_from(["apiKey", "token", "k.e-y_1"]))
        spec["credentialRef"] = {"name": draw(object_name()), "key": key}
        if draw(mostly()):
            held = key if draw(mostly()) else "other"
            secrets.append(
                secret(spec["credentialRef"]["name"], namespace, {held: draw(secret_value())})
            )
    meta_labels = {**draw(labels(max_size=2)), "model": draw(st.sampled_from(MODELS))}
    if hosted:
        cluster = draw(st.sampled_from(cluster_names))
        meta_labels["fleetgate.dev/cluster"] = names.label_value(cluster)
        spec["origin"] = f"https://{names.cluster_hostname(cluster)}"
    obj = xr("ModelEndpoint", name, spec, namespace=namespace)
    obj["metadata"]["labels"] = meta_labels
    ready = draw(st.sampled_from(["True", "True", "False", None]))
    obj["status"] = (
        {"conditions": [{"type": "EndpointReady", "status": ready, "reason": "Probe"}]}
        if ready
        else {}
    )
    return obj, secrets


@st.composite
def service(draw: st.DrawFn, name: str, namespace: str, endpoint_labels: list[dict[str, str]]):  # type: ignore[no-untyped-def]
    """A ModelService selecting some of the endpoints (and sometimes none)."""
    selectors = [{"model": m} for m in MODELS] + [ls for ls in endpoint_labels if ls]
    entries = draw(
        st.lists(
            st.fixed_dictionaries(
                {"selector": st.builds(lambda ls: {"matchLabels": ls}, st.sampled_from(selectors))},
                optional={
                    "weight": st.sampled_from([1, 2, limit(MS, "spec.endpoints[].weight")]),
                    "priority": st.sampled_from([0, 1, limit(MS, "spec.endpoints[].priority")]),
                },
            ),
            min_size=1,
            max_size=limit(MS, "spec.endpoints"),
        )
    )
    obj = xr("ModelService", name, {"endpoints": entries}, namespace=namespace)
    obj["metadata"]["labels"] = draw(labels(max_size=3))
    return obj


# Engine and provider pairs a provider can run (and now and then one it refuses).
RUNNABLE = [
    ("vllm", "Direct", 1),
    ("vllm", "LLMD", 1),
    ("llamacpp", "Direct", 0),
    ("vllm", "LLMD", 0),
    ("llamacpp", "KAITO", 0),
    ("vllm", "KubeRay", 2),
    ("sglang", "Dynamo", 1),
    ("trtllm", "Direct", 0),
]


@st.composite
def deployment(draw: st.DrawFn, name: str, namespace: str) -> Obj:
    spec: Obj = {"model": {"name": draw(free_text(limit(MD, "spec.model.name")))}}
    if draw(mostly()):
        engine, provider, gpus = draw(st.sampled_from(RUNNABLE))
        spec["engine"] = {
            "type": engine,
            "args": ["--served-model-name", "$(FLEETGATE_SERVED_MODEL_NAME)"],
        }
        spec["provider"] = {"name": provider}
        spec["resources"] = {"gpu": {"count": gpus}}
        spec["replicas"] = draw(st.sampled_from([1, 2, 3]))
        if draw(st.booleans()):
            return xr("ModelDeployment", name, spec, namespace=namespace)
    optional: dict[str, st.SearchStrategy[Any]] = {
        "engine": st.fixed_dictionaries(
            {},
            optional={
                "type": allowed(MD, "spec.engine.type"),
                "image": st.sampled_from(
                    ["vllm/vllm-openai:v0.11.0", "i" * limit(MD, "spec.engine.image")]
                ),
                "args": st.lists(
                    st.sampled_from(["--served-model-name", "$(FLEETGATE_SERVED_MODEL_NAME)"])
                    | free_text(64),
                    max_size=8,
                ),
                "env": st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["A", "FLEETGATE_SERVED_MODEL_NAME", "b.c-d"])},
                        optional={"value": free_text(64)},
                    ),
                    max_size=4,
                    unique_by=lambda e: e["name"],
                ),
            },
        ),
        "provider": st.fixed_dictionaries({}, optional={"name": allowed(MD, "spec.provider.name")}),
        "resources": st.builds(
            lambda n: {"gpu": {"count": n}},
            st.sampled_from([0, 1, 2, limit(MD, "spec.resources.gpu.count")]),
        ),
        "servingMode": allowed(MD, "spec.servingMode"),
        "replicas": st.sampled_from([0, 1, 2, 5, limit(MD, "spec.replicas")]),
        "placement": st.builds(
            lambda ls: {"clusterSelector": {"matchLabels": ls}}, labels(max_size=2)
        ),
        "template": st.builds(lambda ls: {"metadata": {"labels": ls}}, labels(max_size=3)),
    }
    for field, strategy in optional.items():
        if draw(st.booleans()):
            spec[field] = draw(strategy)
    return xr("ModelDeployment", name, spec, namespace=namespace)


# --- whole worlds ---------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """The XR a function answers for, the world it reads, and how many passes to walk."""

    kind: str
    xr: Obj
    world: list[Obj]
    passes: int

    def __repr__(self) -> str:  # hypothesis prints this on failure: keep it readable
        meta = self.xr.get("metadata") or {}
        return (
            f"Scenario({self.kind} {meta.get('namespace', '')}/{meta.get('name')}, "
            f"{len(self.world)} objects, {self.passes} passes, xr={self.xr!r})"
        )


@st.composite
def world(draw: st.DrawFn) -> list[Obj]:
    """Clusters, gateways, endpoints, services and deployments that reference each other."""
    objects: list[Obj] = []
    cluster_names = draw(st.lists(xr_name(), min_size=1, max_size=4, unique=True))
    for name in cluster_names:
        obj, secrets = draw(cluster(name))
        objects += [obj, *secrets]
    for name in draw(st.lists(xr_name(), min_size=1, max_size=3, unique=True)):
        obj, secrets = draw(gateway(name, cluster_names))
        objects += [obj, *secrets]
    namespace = draw(st.sampled_from(NAMESPACES))
    endpoint_labels = []
    for name in draw(st.lists(xr_name(), min_size=1, max_size=6, unique=True)):
        obj, secrets = draw(endpoint(name, namespace, cluster_names))
        objects += [obj, *secrets]
        endpoint_labels.append(
            {k: v for k, v in obj["metadata"]["labels"].items() if not k.startswith("fleetgate")}
        )
    for name in draw(st.lists(xr_name(), min_size=0, max_size=2, unique=True)):
        objects.append(draw(service(name, namespace, endpoint_labels)))
    for name in draw(st.lists(xr_name(), min_size=0, max_size=2, unique=True)):
        objects.append(draw(deployment(name, namespace)))
    return _unique_secrets(objects)


def _unique_secrets(objects: list[Obj]) -> list[Obj]:
    """One Secret per namespace and name (the last drawn), as on a real API server."""
    seen: dict[tuple[str, str], int] = {}
    out: list[Obj] = []
    for obj in objects:
        if obj["kind"] == "Secret":
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            if key in seen:
                out[seen[key]] = obj
                continue
            seen[key] = len(out)
        out.append(obj)
    return out


@st.composite
def scenario(draw: st.DrawFn, kind: str, max_passes: int = 6) -> Scenario:
    """A world holding at least one XR of ``kind``, and the XR to answer for."""
    if kind == "ModelRoute":
        return draw(route_scenario(max_passes))
    objects = draw(world())
    candidates = [o for o in objects if o["kind"] == kind]
    if not candidates:
        namespace = next(
            o["metadata"]["namespace"] for o in objects if o["kind"] == "ModelEndpoint"
        )
        name = draw(xr_name())
        if kind == "InferenceCluster":
            obj, secrets = draw(cluster(name))
            objects += [obj, *secrets]
        elif kind == "InferenceGateway":
            obj, secrets = draw(gateway(name, [o["metadata"]["name"] for o in objects]))
            objects += [obj, *secrets]
        elif kind == "ModelEndpoint":
            obj, secrets = draw(endpoint(name, namespace, []))
            objects += [obj, *secrets]
        elif kind == "ModelService":
            obj = draw(service(name, namespace, []))
            objects.append(obj)
        else:
            obj = draw(deployment(name, namespace))
            objects.append(obj)
        candidates = [obj]
    chosen = draw(st.sampled_from(candidates))
    # The XR under test starts unreconciled: its status is what the walk writes.
    subject = {k: v for k, v in chosen.items() if k != "status"}
    return Scenario(kind, subject, _unique_secrets(objects), draw(st.integers(1, max_passes)))


@st.composite
def route_scenario(draw: st.DrawFn, max_passes: int) -> Scenario:
    """A ModelRoute as a ModelService composed it: walk a service, take one of its routes."""
    service = draw(scenario("ModelService", max_passes=3))
    walked = walk("ModelService", service.xr, service.world, service.passes)
    routes = [
        obj
        for answered in walked.answered
        for obj in answered.desired.values()
        if obj.get("kind") == "ModelRoute"
    ]
    assume(routes)
    return Scenario(
        "ModelRoute", draw(st.sampled_from(routes)), service.world, draw(st.integers(1, max_passes))
    )


def is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
