"""LLMD: the engine pods behind a Gateway API Inference Extension InferencePool.

The pool's endpoint picker (EPP) chooses a pod per request from the engines'
queue depth, KV-cache use and prefix-cache hits, instead of round robin. One
picker serves exactly one pool, so each deployment gets its own on each
cluster: a Deployment, its Service, its configuration and the RBAC it needs
to watch the pool and its pods.

Pinned to GAIE v1.0.2, the version of the InferencePool CRD the clusters run.
"""

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from fleetgate.core.models import ServingProvider
from fleetgate.core.observed import Observed
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import (
    WORKLOAD_LABEL,
    Manifest,
    RemotePart,
    Rendered,
    Renderer,
    Workload,
)

POOL_GROUP = "inference.networking.k8s.io"
PICKER_IMAGE = "registry.k8s.io/gateway-api-inference-extension/epp:v1.0.2"
PICKER_PORT = 9002  # ext-proc gRPC, what the gateway calls
PICKER_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
CONFIG_FILE = "epp-config.yaml"
CONFIG_DIGEST_ANNOTATION = "fleetgate.dev/config-digest"

# What happens when the picker does not answer is decided by the gateway, and
# Envoy AI Gateway v1.1.0 (which builds the picker's ext_proc filter for Envoy
# Gateway) always builds it fail-closed and never reads this field
# (internal/extensionserver/inferencepool.go:288-315, FailureModeAllow: false):
# with the picker down, requests to the pool fail; there is no fallback to the
# gateway's own load balancing. The field is set to what actually happens,
# explicitly (the CRD defaults it to the same, GAIE v1.0.2
# api/v1/inferencepool_types.go:139-144), so the object does not promise a
# FailOpen that no gateway of this fleet honours.
FAILURE_MODE = "FailClose"

# The upstream chart's default scheduling profile, in the EndpointPickerConfig
# format of this EPP version. JSON is YAML, and keeps the function free of a
# YAML dependency.
PICKER_CONFIG: dict[str, Any] = {
    "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
    "kind": "EndpointPickerConfig",
    "plugins": [
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
        {"type": "prefix-cache-scorer"},
    ],
    "schedulingProfiles": [
        {
            "name": "default",
            "plugins": [
                {"pluginRef": "queue-scorer", "weight": 2},
                {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                {"pluginRef": "prefix-cache-scorer", "weight": 3},
            ],
        }
    ],
}


def picker_name(workload: Workload) -> str:
    return workload.child("epp")


def inference_pool(workload: Workload) -> Manifest:
    return {
        "apiVersion": f"{POOL_GROUP}/v1",
        "kind": "InferencePool",
        "metadata": pods.metadata(workload, workload.name),
        "spec": {
            "selector": {"matchLabels": dict(workload.selector)},
            "targetPorts": [{"number": workload.engine.port}],
            "endpointPickerRef": {
                "group": "",
                "kind": "Service",
                "name": picker_name(workload),
                "port": {"number": PICKER_PORT},
                "failureMode": FAILURE_MODE,
            },
        },
    }


def picker_config(workload: Workload) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": pods.metadata(workload, picker_name(workload)),
        "data": {CONFIG_FILE: json.dumps(PICKER_CONFIG, indent=2) + "\n"},
    }


def picker_auth_name(workload: Workload) -> str:
    """The ClusterRole (and binding) of one picker: cluster-wide, so it says whose it is."""
    return f"fleetgate-{picker_name(workload)}"


def picker_auth_rbac(workload: Workload) -> tuple[Manifest, Manifest]:
    """ClusterRole and ClusterRoleBinding: let the picker authenticate metrics scrapes.

    The picker serves /metrics behind controller-runtime's
    WithAuthenticationAndAuthorization filter (GAIE v1.0.2,
    cmd/epp/runner/runner.go:186-189), which asks the API server to review
    each scraper's token and access: without create on tokenreviews and
    subjectaccessreviews every scrape is refused. Upstream's chart grants
    exactly these (config/charts/inferencepool/templates/rbac.yaml:1-38).
    Both kinds are cluster-scoped, hence no namespace and a cluster-wide name.
    """
    name = picker_auth_name(workload)
    meta = {"name": name, "labels": dict(workload.labels)}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta,
        "rules": [
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["tokenreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["subjectaccessreviews"],
                "verbs": ["create"],
            },
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": dict(meta, labels=dict(workload.labels)),
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": picker_name(workload),
                "namespace": workload.namespace,
            }
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
    }
    return role, binding


def picker_rbac(workload: Workload) -> tuple[Manifest, Manifest, Manifest]:
    """ServiceAccount, Role and RoleBinding: read the pool and the pods it selects."""
    name = picker_name(workload)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": pods.metadata(workload, name),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": [POOL_GROUP],
                "resources": ["inferencepools"],
                "verbs": ["get", "list", "watch"],
            },
            {
                "apiGroups": ["inference.networking.x-k8s.io"],
                "resources": ["inferenceobjectives"],
                "verbs": ["get", "list", "watch"],
            },
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": pods.metadata(workload, name),
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": workload.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": pods.metadata(workload, name),
    }
    return account, role, binding


def _grpc_probe() -> dict[str, Any]:
    return {
        "grpc": {"port": PICKER_HEALTH_PORT, "service": "inference-extension"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }


def picker_deployment(workload: Workload, image: str = PICKER_IMAGE) -> Manifest:
    name = picker_name(workload)
    selector = {WORKLOAD_LABEL: name}
    config = picker_config(workload)["data"][CONFIG_FILE]
    container = {
        "name": "epp",
        "image": image,
        "args": [
            *("--pool-name", workload.name),
            *("--pool-namespace", workload.namespace),
            *("--pool-group", POOL_GROUP),
            *("--zap-encoder", "json"),
            *("--config-file", f"/config/{CONFIG_FILE}"),
        ],
        "ports": [
            {"name": "grpc", "containerPort": PICKER_PORT, "protocol": "TCP"},
            {"name": "grpc-health", "containerPort": PICKER_HEALTH_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": PICKER_METRICS_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _grpc_probe(),
        "readinessProbe": _grpc_probe(),
        "volumeMounts": [{"name": "config", "mountPath": "/config"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": pods.metadata(workload, name),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": {**workload.labels, **selector},
                    # A changed configuration rolls the picker: it reads the file once.
                    "annotations": {
                        CONFIG_DIGEST_ANNOTATION: hashlib.sha256(config.encode()).hexdigest()
                    },
                },
                "spec": {
                    "serviceAccountName": name,
                    # As long as the engines' own grace period: in-flight picks finish.
                    "terminationGracePeriodSeconds": 130,
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": name}}],
                },
            },
        },
    }


def picker_service(workload: Workload) -> Manifest:
    name = picker_name(workload)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": pods.metadata(workload, name),
        "spec": {
            "selector": {WORKLOAD_LABEL: name},
            "ports": [
                {
                    "name": "grpc-ext-proc",
                    "port": PICKER_PORT,
                    "targetPort": "grpc",
                    "protocol": "TCP",
                }
            ],
        },
    }


def pool_parts(workload: Workload, image: str = PICKER_IMAGE) -> tuple[RemotePart, ...]:
    """The pool over the workload's pods (``workload.selector``) and its endpoint picker."""
    account, role, binding = picker_rbac(workload)
    auth_role, auth_binding = picker_auth_rbac(workload)
    return (
        RemotePart("pool", inference_pool(workload)),
        RemotePart("picker-account", account),
        RemotePart("picker-role", role),
        RemotePart("picker-binding", binding),
        RemotePart("picker-auth-role", auth_role),
        RemotePart("picker-auth-binding", auth_binding),
        RemotePart("picker-config", picker_config(workload)),
        RemotePart("picker", picker_deployment(workload, image)),
        RemotePart("picker-service", picker_service(workload)),
    )


def pool_backend(workload: Workload) -> Manifest:
    return {"group": POOL_GROUP, "kind": "InferencePool", "name": workload.name}


class LLMD(Renderer):
    name: ServingProvider = "LLMD"
    # Applied to the engine Deployment, not the picker.
    overrides: type[BaseModel] = pods.DeploymentOverrides
    starts_engine: bool = False

    def render(self, workload: Workload) -> Rendered:
        return Rendered(
            parts=(
                RemotePart(pods.ENGINE_PART, pods.engine_deployment(workload), pods.SERVING_QUERY),
                *pool_parts(workload),
            ),
            backend_ref=pool_backend(workload),
        )

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return pods.ready_engine_replicas(observed)
