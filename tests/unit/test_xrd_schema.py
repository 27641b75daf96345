"""Shape of the XRDs and their Compositions against the API contract.

The field tables below are api.md written as data: if an XRD drops, renames or
re-types a field, or changes a default, a case here names it. The bound walk
makes sure no string, list or map a user (or a function, in status) can fill is
unbounded, which the API server's CEL cost estimator and etcd both rely on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import re2  # type: ignore[import-untyped]
import yaml

from schemas import xrds

ROOT = Path(__file__).resolve().parents[2]
GROUP = "fleetgate.dev"
VERSION = "v1alpha1"

# kind -> (plural, scope, shortName, function)
KINDS: dict[str, tuple[str, str, str, str]] = {
    "InferenceCluster": ("inferenceclusters", "Cluster", "ic", "compose-inference-cluster"),
    "InferenceGateway": ("inferencegateways", "Cluster", "ig", "compose-inference-gateway"),
    "ModelService": ("modelservices", "Namespaced", "ms", "compose-model-service"),
    "ModelEndpoint": ("modelendpoints", "Namespaced", "me", "compose-model-endpoint"),
    "ModelDeployment": ("modeldeployments", "Namespaced", "md", "compose-model-deployment"),
    # Internal: composed by ModelService (one per serving gateway), by the same function.
    "ModelRoute": ("modelroutes", "Namespaced", "mr", "compose-model-service"),
}
# Kinds composed by another kind's function, not by one of their own.
SHARES_FUNCTION_OF = {"ModelRoute": "ModelService"}


def _load(path: Path) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert len(docs) == 1, f"{path} holds {len(docs)} documents"
    doc = docs[0]
    assert isinstance(doc, dict)
    return doc


XRDS = {kind: _load(ROOT / "apis" / p / "definition.yaml") for kind, (p, *_) in KINDS.items()}
COMPOSITIONS = {kind: _load(ROOT / "compositions" / f"{p}.yaml") for kind, (p, *_) in KINDS.items()}


def _schema(kind: str) -> dict[str, Any]:
    schema = XRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


def _node(kind: str, dotted: str) -> dict[str, Any]:
    """The schema node at e.g. ``spec.endpoints[].selector.matchLabels``."""
    node = _schema(kind)
    for part in dotted.split("."):
        many = part.endswith("[]")
        name = part.removesuffix("[]")
        props = node.get("properties", {})
        assert name in props, f"{kind}: no field {dotted!r} (missing {name!r})"
        node = props[name]
        if many:
            assert node.get("type") == "array", f"{kind}: {dotted!r} is not a list"
            node = node["items"]
    return node


ALL_NODES = [
    (kind, path, node) for kind in KINDS for path, node in xrds.walk(_schema(kind)) if path
]
NODE_IDS = [f"{kind}:{path}" for kind, path, _ in ALL_NODES]


# --- identity ----------------------------------------------------------------


def _spec(doc: dict[str, Any], api_version: str, kind: str, plural: str) -> dict[str, Any]:
    """The spec of an XRD or Composition, once it is what it says and named ``<plural>.<group>``."""
    assert (doc["apiVersion"], doc["kind"]) == (api_version, kind)
    assert doc["metadata"]["name"] == f"{plural}.{GROUP}"
    spec: dict[str, Any] = doc["spec"]
    return spec


@pytest.mark.parametrize("kind", KINDS)
def test_xrd_identity(kind: str) -> None:
    plural, scope, short, _ = KINDS[kind]
    spec = _spec(
        XRDS[kind], "apiextensions.crossplane.io/v2", "CompositeResourceDefinition", plural
    )
    assert spec["group"] == GROUP
    assert spec["scope"] == scope
    names = spec["names"]
    assert names["kind"] == kind
    assert names["plural"] == plural
    assert names["singular"] == kind.lower()
    assert names["listKind"] == f"{kind}List"
    assert names["shortNames"] == [short]
    assert names["categories"] == ["crossplane", "fleetgate"]
    assert "claimNames" not in spec
    assert "connectionSecretKeys" not in spec
    [version] = spec["versions"]
    assert version["name"] == VERSION
    assert version["served"] is True
    assert version["referenceable"] is True
    assert spec["defaultCompositionRef"] == {"name": COMPOSITIONS[kind]["metadata"]["name"]}


@pytest.mark.parametrize("kind", KINDS)
def test_composition_calls_its_function(kind: str) -> None:
    plural, _, _, function = KINDS[kind]
    spec = _spec(COMPOSITIONS[kind], "apiextensions.crossplane.io/v1", "Composition", plural)
    assert spec["compositeTypeRef"] == {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind}
    assert spec["mode"] == "Pipeline"
    [step] = spec["pipeline"]
    assert step["step"]
    assert step["functionRef"] == {"name": function}


def test_function_names_distinct() -> None:
    functions = [f for kind, (*_, f) in KINDS.items() if kind not in SHARES_FUNCTION_OF]
    assert len(set(functions)) == len(functions) == 5
    for kind, owner in SHARES_FUNCTION_OF.items():
        assert KINDS[kind][3] == KINDS[owner][3]


# --- fields of api.md --------------------------------------------------------

# (kind, dotted path, OpenAPI type)
FIELDS: list[tuple[str, str, str]] = [
    ("InferenceCluster", "spec.credentials", "object"),
    ("InferenceCluster", "spec.credentials.secretRef.name", "string"),
    ("InferenceCluster", "spec.credentials.secretRef.key", "string"),
    ("InferenceCluster", "spec.credentials.providerConfigName", "string"),
    ("InferenceCluster", "spec.placement.metadata.labels", "object"),
    ("InferenceCluster", "spec.capacity.gpus", "integer"),
    ("InferenceCluster", "spec.capacity.gpuType", "string"),
    ("InferenceCluster", "spec.providers", "array"),
    ("InferenceCluster", "spec.gateway.className", "string"),
    ("InferenceCluster", "spec.stack.install", "boolean"),
    ("InferenceCluster", "spec.schedulable", "boolean"),
    ("InferenceCluster", "status.providerConfigRef.name", "string"),
    ("InferenceCluster", "status.gateway.address", "string"),
    ("InferenceCluster", "status.gateway.caCertificate", "string"),
    ("InferenceCluster", "status.gateway.hostname", "string"),
    ("InferenceGateway", "spec.clusterName", "string"),
    ("InferenceGateway", "spec.hostname", "string"),
    ("InferenceGateway", "spec.tls.certificateRefs", "array"),
    ("InferenceGateway", "spec.tls.certificateRefs[].name", "string"),
    ("InferenceGateway", "spec.auth.secretSelector.matchLabels", "object"),
    ("InferenceGateway", "spec.serviceSelector.matchLabels", "object"),
    ("InferenceGateway", "spec.failover.retries", "integer"),
    ("InferenceGateway", "spec.failover.retryOn.httpStatusCodes", "array"),
    ("InferenceGateway", "spec.failover.requestTimeout", "string"),
    ("InferenceGateway", "spec.failover.streamIdleTimeout", "string"),
    ("InferenceGateway", "spec.failover.outlierDetection.consecutive5xxErrors", "integer"),
    ("InferenceGateway", "spec.failover.outlierDetection.baseEjectionTime", "string"),
    ("InferenceGateway", "status.address", "string"),
    ("InferenceGateway", "status.clientCACertificate", "string"),
    ("InferenceGateway", "status.endpoints.openAI", "string"),
    ("InferenceGateway", "status.endpoints.anthropic", "string"),
    ("ModelEndpoint", "spec.origin", "string"),
    ("ModelEndpoint", "spec.api.schema", "string"),
    ("ModelEndpoint", "spec.api.prefix", "string"),
    ("ModelEndpoint", "spec.model", "string"),
    ("ModelEndpoint", "spec.credentialRef.name", "string"),
    ("ModelEndpoint", "spec.credentialRef.key", "string"),
    ("ModelService", "spec.endpoints", "array"),
    ("ModelService", "spec.endpoints[].selector.matchLabels", "object"),
    ("ModelService", "spec.endpoints[].weight", "integer"),
    ("ModelService", "spec.endpoints[].priority", "integer"),
    ("ModelService", "status.model", "string"),
    ("ModelService", "status.gateways[].name", "string"),
    ("ModelService", "status.gateways[].openAI", "string"),
    ("ModelService", "status.endpoints.total", "integer"),
    ("ModelService", "status.endpoints.ready", "integer"),
    ("ModelDeployment", "spec.model.name", "string"),
    ("ModelDeployment", "spec.model.source", "string"),
    ("ModelDeployment", "spec.engine.type", "string"),
    ("ModelDeployment", "spec.engine.image", "string"),
    ("ModelDeployment", "spec.engine.args", "array"),
    ("ModelDeployment", "spec.engine.env[].name", "string"),
    ("ModelDeployment", "spec.engine.env[].value", "string"),
    ("ModelDeployment", "spec.provider.name", "string"),
    ("ModelDeployment", "spec.provider.overrides", "object"),
    ("ModelDeployment", "spec.resources.gpu.count", "integer"),
    ("ModelDeployment", "spec.resources.gpu.type", "string"),
    ("ModelDeployment", "spec.servingMode", "string"),
    ("ModelDeployment", "spec.replicas", "integer"),
    ("ModelDeployment", "spec.placement.clusterSelector.matchLabels", "object"),
    ("ModelDeployment", "spec.template.metadata.labels", "object"),
    ("ModelDeployment", "status.engine.type", "string"),
    ("ModelDeployment", "status.engine.selectedReason", "string"),
    ("ModelDeployment", "status.provider.name", "string"),
    ("ModelDeployment", "status.provider.selectedReason", "string"),
    ("ModelDeployment", "status.servedModelName", "string"),
    ("ModelDeployment", "status.placements[].cluster", "string"),
    ("ModelDeployment", "status.placements[].replicas", "integer"),
    ("ModelDeployment", "status.replicas.desired", "integer"),
    ("ModelDeployment", "status.replicas.ready", "integer"),
    ("ModelRoute", "spec.model", "string"),
    ("ModelRoute", "spec.gateway.name", "string"),
    ("ModelRoute", "spec.gateway.gatewayName", "string"),
    ("ModelRoute", "spec.gateway.providerConfigName", "string"),
    ("ModelRoute", "spec.gateway.requestTimeout", "string"),
    ("ModelRoute", "spec.gateway.streamIdleTimeout", "string"),
    ("ModelRoute", "spec.backends", "array"),
    ("ModelRoute", "spec.backends[].endpoint", "string"),
    ("ModelRoute", "spec.backends[].weight", "integer"),
    ("ModelRoute", "spec.backends[].priority", "integer"),
    ("ModelRoute", "spec.backends[].modelNameOverride", "string"),
    ("ModelRoute", "spec.backends[].host", "string"),
    ("ModelRoute", "spec.backends[].port", "integer"),
    ("ModelRoute", "spec.backends[].schema", "string"),
    ("ModelRoute", "spec.backends[].prefix", "string"),
    ("ModelRoute", "spec.backends[].tls", "string"),
    ("ModelRoute", "spec.backends[].cluster", "string"),
    ("ModelRoute", "spec.backends[].credential.name", "string"),
    ("ModelRoute", "spec.backends[].credential.key", "string"),
    ("ModelRoute", "status.route", "string"),
    ("ModelRoute", "status.backends", "integer"),
]


@pytest.mark.parametrize(("kind", "path", "type_"), FIELDS, ids=[f"{k}:{p}" for k, p, _ in FIELDS])
def test_field_exists(kind: str, path: str, type_: str) -> None:
    assert _node(kind, path).get("type") == type_


# (kind, dotted path, default)
DEFAULTS: list[tuple[str, str, Any]] = [
    ("InferenceCluster", "spec.credentials.secretRef.key", "kubeconfig"),
    ("InferenceCluster", "spec.providers", ["Direct"]),
    ("InferenceCluster", "spec.gateway.className", "envoy"),
    ("InferenceCluster", "spec.stack.install", False),
    ("InferenceCluster", "spec.schedulable", True),
    ("InferenceGateway", "spec.failover.retries", 3),
    ("InferenceGateway", "spec.failover.retryOn.httpStatusCodes", [503]),
    ("InferenceGateway", "spec.failover.requestTimeout", "300s"),
    ("InferenceGateway", "spec.failover.streamIdleTimeout", "60s"),
    ("InferenceGateway", "spec.failover.outlierDetection.consecutive5xxErrors", 5),
    ("InferenceGateway", "spec.failover.outlierDetection.baseEjectionTime", "30s"),
    ("ModelEndpoint", "spec.api.schema", "OpenAI"),
    ("ModelEndpoint", "spec.api.prefix", "/v1"),
    ("ModelEndpoint", "spec.credentialRef.key", "apiKey"),
    ("ModelService", "spec.endpoints[].weight", 1),
    ("ModelService", "spec.endpoints[].priority", 0),
    ("ModelDeployment", "spec.replicas", 1),
    ("ModelDeployment", "spec.servingMode", "Aggregated"),
]


@pytest.mark.parametrize(
    ("kind", "path", "default"), DEFAULTS, ids=[f"{k}:{p}" for k, p, _ in DEFAULTS]
)
def test_default(kind: str, path: str, default: Any) -> None:
    node = _node(kind, path)
    assert node.get("default") == default
    assert type(node["default"]) is type(default)


def _parents(path: str) -> Iterator[str]:
    parts = path.split(".")
    for i in range(2, len(parts)):
        yield ".".join(parts[:i])


# Defaults of a nested field only apply when its parent object exists, so the
# parents of the defaults above must default to {} unless a user always writes
# them (a required object, an optional ref whose key defaults only when it is
# given, a list item).
OPTIONAL_PARENTS = {
    ("InferenceCluster", "spec.credentials"),
    ("InferenceCluster", "spec.credentials.secretRef"),
    ("ModelEndpoint", "spec.credentialRef"),
}


@pytest.mark.parametrize(
    ("kind", "path"),
    sorted(
        {
            (k, parent)
            for k, p, _ in DEFAULTS
            for parent in _parents(p)
            if "[]" not in parent and (k, parent) not in OPTIONAL_PARENTS
        }
    ),
)
def test_parent_of_default_defaults_to_empty(kind: str, path: str) -> None:
    assert _node(kind, path).get("default") == {}


# (kind, dotted path, enum)
ENUMS: list[tuple[str, str, list[str]]] = [
    ("InferenceCluster", "spec.providers[]", ["Direct", "LLMD", "KAITO", "Dynamo", "KubeRay"]),
    ("ModelEndpoint", "spec.api.schema", ["OpenAI", "Anthropic"]),
    ("ModelDeployment", "spec.engine.type", ["vllm", "sglang", "trtllm", "llamacpp"]),
    ("ModelDeployment", "spec.provider.name", ["Direct", "LLMD", "KAITO", "Dynamo", "KubeRay"]),
    ("ModelDeployment", "spec.servingMode", ["Aggregated", "Disaggregated"]),
    ("ModelRoute", "spec.backends[].schema", ["OpenAI", "Anthropic"]),
    ("ModelRoute", "spec.backends[].tls", ["Mutual", "System", "Off"]),
]


@pytest.mark.parametrize(("kind", "path", "enum"), ENUMS, ids=[f"{k}:{p}" for k, p, _ in ENUMS])
def test_enum(kind: str, path: str, enum: list[str]) -> None:
    assert _node(kind, path)["enum"] == enum


# (kind, dotted path, keyword, value): the numeric bounds api.md states.
BOUNDS: list[tuple[str, str, str, int]] = [
    ("InferenceCluster", "spec.placement.metadata.labels", "maxProperties", 16),
    ("InferenceCluster", "spec.capacity.gpus", "minimum", 0),
    ("InferenceGateway", "spec.tls.certificateRefs", "minItems", 1),
    ("InferenceGateway", "spec.tls.certificateRefs", "maxItems", 8),
    ("ModelService", "spec.endpoints", "minItems", 1),
    ("ModelService", "spec.endpoints", "maxItems", 32),
    ("ModelService", "spec.endpoints[].weight", "minimum", 1),
    ("ModelService", "spec.endpoints[].weight", "maximum", 1000000),
    ("ModelService", "spec.endpoints[].priority", "minimum", 0),
    ("ModelService", "spec.endpoints[].priority", "maximum", 63),
    ("ModelDeployment", "spec.template.metadata.labels", "maxProperties", 16),
    ("ModelDeployment", "spec.resources.gpu.count", "minimum", 0),
    ("ModelRoute", "spec.backends", "minItems", 1),
    ("ModelRoute", "spec.backends", "maxItems", 16),
    ("ModelRoute", "spec.backends[].weight", "minimum", 1),
    ("ModelRoute", "spec.backends[].weight", "maximum", 1000000),
    ("ModelRoute", "spec.backends[].priority", "minimum", 0),
    ("ModelRoute", "spec.backends[].priority", "maximum", 63),
    ("ModelRoute", "spec.backends[].port", "minimum", 1),
    ("ModelRoute", "spec.backends[].port", "maximum", 65535),
    ("ModelRoute", "spec.gateway.gatewayName", "maxLength", 63),
    ("ModelService", "spec.access.callers", "maxItems", 256),
    ("ModelService", "spec.access.groups", "maxItems", 64),
    ("ModelRoute", "spec.access.callers", "maxItems", 4096),
]


@pytest.mark.parametrize(
    ("kind", "path", "keyword", "value"),
    BOUNDS,
    ids=[f"{k}:{p}:{w}" for k, p, w, _ in BOUNDS],
)
def test_bound(kind: str, path: str, keyword: str, value: int) -> None:
    assert _node(kind, path).get(keyword) == value


# (kind, dotted path of an object, required fields)
REQUIRED: list[tuple[str, str, list[str]]] = [
    ("InferenceCluster", "spec", ["credentials"]),
    ("InferenceCluster", "spec.credentials.secretRef", ["name"]),
    ("InferenceGateway", "spec", ["clusterName"]),
    ("InferenceGateway", "spec.tls", ["certificateRefs"]),
    ("ModelEndpoint", "spec", ["origin"]),
    ("ModelEndpoint", "spec.credentialRef", ["name"]),
    ("ModelService", "spec", ["endpoints"]),
    ("ModelService", "spec.endpoints[]", ["selector"]),
    ("ModelDeployment", "spec", ["model"]),
    ("ModelDeployment", "spec.model", ["name"]),
    ("ModelDeployment", "spec.engine.env[]", ["name"]),
    ("ModelRoute", "spec", ["model", "gateway", "backends"]),
    (
        "ModelRoute",
        "spec.gateway",
        ["name", "gatewayName", "providerConfigName", "requestTimeout", "streamIdleTimeout"],
    ),
    (
        "ModelRoute",
        "spec.backends[]",
        ["endpoint", "weight", "priority", "host", "port", "schema", "prefix", "tls"],
    ),
    ("ModelRoute", "spec.backends[].credential", ["name", "key"]),
]


@pytest.mark.parametrize(
    ("kind", "path", "required"), REQUIRED, ids=[f"{k}:{p}" for k, p, _ in REQUIRED]
)
def test_required(kind: str, path: str, required: list[str]) -> None:
    assert sorted(_node(kind, path).get("required", [])) == sorted(required)


@pytest.mark.parametrize("kind", KINDS)
def test_spec_required_and_crossplane_fields_left_to_crossplane(kind: str) -> None:
    schema = _schema(kind)
    assert schema["required"] == ["spec"]
    # Crossplane injects spec.crossplane and status.conditions; declaring them
    # here would be overridden at best.
    assert "crossplane" not in schema["properties"]["spec"]["properties"]
    assert "conditions" not in schema["properties"].get("status", {}).get("properties", {})


def test_overrides_are_free_form() -> None:
    node = _node("ModelDeployment", "spec.provider.overrides")
    assert node.get("x-kubernetes-preserve-unknown-fields") is True
    assert "properties" not in node


# --- every node well-formed, bounded and explained ---------------------------


@pytest.mark.parametrize(("kind", "path", "node"), ALL_NODES, ids=NODE_IDS)
def test_node_is_bounded(kind: str, path: str, node: dict[str, Any]) -> None:
    type_ = node.get("type")
    assert type_ in {"object", "array", "string", "integer", "boolean"}, f"{path}: type {type_}"
    if type_ == "string":
        assert "maxLength" in node or "enum" in node, f"{kind} {path}: unbounded string"
    if type_ == "array":
        assert "maxItems" in node, f"{kind} {path}: unbounded list"
    if type_ == "object" and (
        "additionalProperties" in node or node.get("x-kubernetes-preserve-unknown-fields")
    ):
        assert "maxProperties" in node, f"{kind} {path}: unbounded map"
    if type_ == "integer":
        assert "minimum" in node, f"{kind} {path}: integer without minimum"
        assert "maximum" in node, f"{kind} {path}: integer without maximum"


@pytest.mark.parametrize(("kind", "path", "node"), ALL_NODES, ids=NODE_IDS)
def test_node_is_described(kind: str, path: str, node: dict[str, Any]) -> None:
    if path.endswith(("[]", "{}")):
        return  # items and map values are explained by their parent
    assert len(node.get("description", "").strip()) >= 10, f"{kind} {path}: no description"


def _scalar_errors(node: dict[str, Any], value: Any) -> list[str]:
    errors: list[str] = []
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{value!r} not in {node['enum']}")
    if isinstance(value, str):
        if not node.get("minLength", 0) <= len(value) <= node.get("maxLength", len(value)):
            errors.append(f"{value!r} has the wrong length")
        if "pattern" in node and not re2.search(node["pattern"], value):
            errors.append(f"{value!r} does not match {node['pattern']}")
    if isinstance(value, int) and not (
        node.get("minimum", value) <= value <= node.get("maximum", value)
    ):
        errors.append(f"{value} out of range")
    return errors


def _conforms(node: dict[str, Any], value: Any) -> list[str]:
    """The few OpenAPI keywords the XRDs use, enough to check their own defaults."""
    pytype = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}
    expected = pytype[node["type"]]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"{value!r} is not {node['type']}"]
    errors = _scalar_errors(node, value)
    if isinstance(value, list):
        if not node.get("minItems", 0) <= len(value) <= node.get("maxItems", len(value)):
            errors.append("wrong number of items")
        for item in value:
            errors += _conforms(node["items"], item)
    if isinstance(value, dict):
        for key, item in value.items():
            errors += _conforms(node.get("properties", {}).get(key, {"type": "object"}), item)
    return errors


DEFAULTED = [(k, p, n) for k, p, n in ALL_NODES if "default" in n]


@pytest.mark.parametrize(
    ("kind", "path", "node"), DEFAULTED, ids=[f"{k}:{p}" for k, p, _ in DEFAULTED]
)
def test_default_is_valid(kind: str, path: str, node: dict[str, Any]) -> None:
    assert _conforms(node, node["default"]) == []


PATTERNED = [(k, p, n) for k, p, n in ALL_NODES if "pattern" in n]


@pytest.mark.parametrize(
    ("kind", "path", "node"), PATTERNED, ids=[f"{k}:{p}" for k, p, _ in PATTERNED]
)
def test_pattern_compiles_everywhere(kind: str, path: str, node: dict[str, Any]) -> None:
    re.compile(node["pattern"])
    re2.compile(node["pattern"])


LIST_MAPS = [(k, p, n) for k, p, n in ALL_NODES if n.get("x-kubernetes-list-type") == "map"]


@pytest.mark.parametrize(
    ("kind", "path", "node"), LIST_MAPS, ids=[f"{k}:{p}" for k, p, _ in LIST_MAPS]
)
def test_list_map_keys_are_required(kind: str, path: str, node: dict[str, Any]) -> None:
    keys = node["x-kubernetes-list-map-keys"]
    assert keys
    assert set(keys) <= set(node["items"].get("required", []))


# --- printer columns ---------------------------------------------------------

COLUMNS = {
    "InferenceCluster": {"HOSTNAME", "SCHEDULABLE"},
    "InferenceGateway": {"CLUSTER", "HOSTNAME", "ADDRESS"},
    "ModelService": {"MODEL"},
    "ModelEndpoint": {"ORIGIN"},
    "ModelDeployment": {"PROVIDER", "REPLICAS"},
    "ModelRoute": {"MODEL", "GATEWAY", "ACCEPTED"},
}


@pytest.mark.parametrize("kind", KINDS)
def test_printer_columns(kind: str) -> None:
    columns = XRDS[kind]["spec"]["versions"][0]["additionalPrinterColumns"]
    names = [c["name"] for c in columns]
    assert COLUMNS[kind] <= set(names)
    assert len(names) == len(set(names))
    # Crossplane adds these itself; a duplicate would shadow its own.
    assert not {"READY", "SYNCED", "COMPOSITION", "AGE"} & set(names)
    for column in columns:
        assert column["type"] in {"string", "integer", "boolean", "number", "date"}
        json_path = column["jsonPath"]
        if "conditions[" in json_path:
            assert json_path.startswith(".status.conditions[?(@.type==")
            continue
        _node(kind, json_path.removeprefix("."))
