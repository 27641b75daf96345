"""LLMD: the engine pods behind a Gateway API Inference Extension InferencePool.

The pool's endpoint picker (EPP) chooses a pod per request from the engines'
queue depth, KV-cache use and prefix-cache hits, instead of round robin. One
picker serves exactly one pool, so each deployment gets its own on each
cluster: a Deployment, its Service, its configuration and the RBAC it needs
to watch the pool and its pods.

The pool is GAIE v1.0.2's InferencePool ``inference.networking.k8s.io/v1``,
the CRD the clusters run. The picker is llm-d's (llm-d-router, named
llm-d-inference-scheduler until v0.9.0) at v0.3.2, the newest release built
on GAIE v1.0.x: its ``go.mod:24`` requires GAIE v1.0.0, whose EPP code and
InferencePool v1 types are those of v1.0.2 (the two tags differ in the
CRD's ``matchLabels`` size markers only, ``api/v1/shared_types.go:140-141``).
Later llm-d releases build on GAIE v1.1 to v1.5, whose pool v1 gained
fields the clusters' CRD does not have. The picker is GAIE v1.0.0's runner
with llm-d's plugins registered (llm-d v0.3.2 ``cmd/epp/main.go:36-43``), so
its flags, ports and config format are that runner's.
"""

import hashlib
import json
from typing import Any

from fleetgate.core.models import ServingProvider
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import (
    WORKLOAD_LABEL,
    Manifest,
    RemotePart,
    Workload,
)

POOL_GROUP = "inference.networking.k8s.io"  # --pool-group, GAIE v1.0.0 runner.go:82
# The image llm-d's release workflow pushes for tag v0.3.2: ghcr.io/llm-d/<repository
# name>:<tag> (.github/workflows/ci-release.yaml:17-21,26-46), the repository then
# being llm-d-inference-scheduler (Makefile:9-13).
PICKER_IMAGE = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.2"
# The runner's default ports (GAIE v1.0.0 pkg/epp/server/runserver.go:69-71), the
# ones the image exposes (llm-d v0.3.2 Dockerfile:58-61).
PICKER_PORT = 9002  # ext-proc gRPC, what the gateway calls
PICKER_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
# A gRPC health service the picker's health server knows (GAIE v1.0.0
# cmd/epp/runner/health.go:64-86), as llm-d v0.3.2 probes it
# (deploy/components/inference-gateway/deployments.yaml:45-56). Without leader
# election every name passes (health.go:49-56), so the chart's "inference-extension"
# worked only by that; with it, an unknown name is SERVICE_UNKNOWN.
PICKER_HEALTH_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"
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

# The picker's configuration, an EndpointPickerConfig
# inference.networking.x-k8s.io/v1alpha1 (GAIE v1.0.0
# apix/config/v1alpha1/zz_generated.register.go:31-34, endpointpickerconfig_types.go:29-112),
# decoded strictly (pkg/epp/config/loader/configloader.go:79). JSON is YAML, and keeps
# the function free of a YAML dependency.
#
# One profile that scores by queue depth, KV-cache use and prefix-cache hits: GAIE's
# in-tree scorers, which the v0.3.2 picker registers (GAIE v1.0.0 runner.go:300-311).
# The profile handler and picker are named, as in llm-d's sample configuration
# (v0.3.2 deploy/config/epp-config.yaml:3-16), rather than left to the loader's
# defaults (loader/defaults.go:83-113). llm-d's own plugins are for disaggregated
# prefill/decode pods labelled llm-d.ai/role and for KV events from vLLM; these
# pools are neither.
PICKER_CONFIG: dict[str, Any] = {
    "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
    "kind": "EndpointPickerConfig",
    "plugins": [
        {"type": "single-profile-handler"},
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
        {"type": "prefix-cache-scorer"},
        {"type": "max-score-picker"},
    ],
    "schedulingProfiles": [
        {
            "name": "default",
            # Every scorer has its weight: the loader defaults one only for scorers
            # listed before the picker (loader/defaults.go:115-125).
            "plugins": [
                {"pluginRef": "queue-scorer", "weight": 2},
                {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                {"pluginRef": "prefix-cache-scorer", "weight": 3},
                {"pluginRef": "max-score-picker"},
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
    WithAuthenticationAndAuthorization filter (GAIE v1.0.0's runner, which llm-d
    v0.3.2 runs, cmd/epp/runner/runner.go:186-189), which asks the API server to review
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
        "grpc": {"port": PICKER_HEALTH_PORT, "service": PICKER_HEALTH_SERVICE},
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
        # GAIE v1.0.0 cmd/epp/runner/runner.go:81-83,100 (pool, config file) and
        # controller-runtime's zap flags (:137-140).
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


class LLMD(pods.CommandEngine):
    name: ServingProvider = "LLMD"

    def front(self, workload: Workload) -> tuple[tuple[RemotePart, ...], Manifest]:
        return pool_parts(workload), pool_backend(workload)
