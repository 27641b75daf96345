"""LLMD: the engine pods behind a Gateway API Inference Extension InferencePool.

The pool's endpoint picker (EPP) chooses a pod per request from the engines'
queue depth, KV-cache use and prefix-cache hits, instead of round robin. One
picker serves exactly one pool, so each deployment gets its own on each
cluster: a Deployment, its Service, its configuration and the RBAC it needs
to watch the pool and its pods.

The pool is InferencePool ``inference.networking.k8s.io/v1`` as the clusters'
CRD (GAIE v1.6.2, ``gaie_crds``) defines it. The picker is llm-d-router v0.10.0's
endpoint picker, built on GAIE v1.5.0 (its ``go.mod``): the GHCR package of the
release Fleetgate used before (llm-d-inference-scheduler v0.3.2) is no longer
public, so it cannot be pulled. Its runner is llm-d-router's own
(``cmd/epp/main.go:32, 45``), and every fact below is read from llm-d-router at
the v0.10.0 tag.

Two readers, two GAIE versions. Envoy AI Gateway v1.1.0 builds against GAIE
v1.0.2 (its ``go.mod:75``) and reads, of a pool, only its apiVersion and kind,
name, namespace and annotations, and ``spec.endpointPickerRef`` name and port
(``internal/extensionserver/inferencepool.go:71-76, 174-179, 320-387, 389-419``;
``internal/controller/inference_pool.go:128``). It decodes the pool leniently
(``runtime.DefaultUnstructuredConverter.FromUnstructured``, inferencepool.go:76),
so v1.6.2's newer fields are dropped, not refused, and it writes
``status.parents`` without ``controllerName`` (inference_pool.go:243-283), which
v1.6.2 leaves optional. It needs ``endpointPickerRef`` (v1.6.2 made it
optional; v1.0.2 types read a missing one as an empty name) and it reads no
``targetPorts``: the pool keeps both as under v1.0.2, one target port, the
picker named. ``appProtocol`` (new in v1.6.2, defaulted to ``http``) is set to
``http``, what the engines speak and what the picker's default OpenAI parser
claims (v0.10.0 ``pkg/epp/framework/plugins/requesthandling/parsers/openai/
openai.go:102``; ``pkg/epp/config/loader/defaults.go:240-251``), so the pool
says it and its health check agrees (``cmd/epp/runner/health.go:127-162``).
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

# --pool-group (llm-d-router v0.10.0 pkg/epp/server/options.go:136,173)
POOL_GROUP = "inference.networking.k8s.io"
# The image llm-d-router's release builds for a tag: ghcr.io/llm-d/llm-d-router-endpoint-picker
# (v0.10.0 Makefile:21,26-30; .github/ISSUE_TEMPLATE/new-release.md:105,143).
# Where the picker finds InferenceObjectives and InferenceModelRewrites (see picker_rbac).
OBJECTIVE_GROUP = "llm-d.ai"
LEGACY_OBJECTIVE_GROUP = "inference.networking.x-k8s.io"
PICKER_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
# The runner's default ports (v0.10.0 pkg/epp/server/options.go:41,150-151), the ones
# its image exposes (Dockerfile.epp:53-55).
PICKER_PORT = 9002  # ext-proc gRPC, what the gateway calls
PICKER_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
# A gRPC health service the picker's health server knows (v0.10.0
# cmd/epp/runner/health.go:80-104): with leader election an unknown name is
# SERVICE_UNKNOWN; without it every name passes once the pool synced (:66-73).
PICKER_HEALTH_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor"
CONFIG_FILE = "epp-config.yaml"
CONFIG_DIGEST_ANNOTATION = "fleetgate.dev/config-digest"

# What happens when the picker does not answer is decided by the gateway, and
# Envoy AI Gateway v1.1.0 (which builds the picker's ext_proc filter for Envoy
# Gateway) always builds it fail-closed and never reads this field
# (internal/extensionserver/inferencepool.go:288-315, FailureModeAllow: false):
# with the picker down, requests to the pool fail; there is no fallback to the
# gateway's own load balancing. The field is set to what actually happens,
# explicitly (the CRD defaults it to the same, GAIE v1.6.2
# api/v1/inferencepool_types.go:168-173), so the object does not promise a
# FailOpen that no gateway of this fleet honours.
FAILURE_MODE = "FailClose"
# The engines' protocol, HTTP/1.1, and GAIE v1.6.2's default for the field
# (api/v1/inferencepool_types.go:83-94, 116-118): see the module docstring.
APP_PROTOCOL = "http"

# The picker's configuration, an EndpointPickerConfig llm-d.ai/v1alpha1 (v0.10.0
# apix/config/v1alpha1/zz_generated.register.go:15-18; the older group
# inference.networking.x-k8s.io is still read but deprecated, pkg/epp/config/loader/
# configloader.go:53-70), decoded strictly (configloader.go:237-238). JSON is YAML, and keeps
# the function free of a YAML dependency. The data layer (metrics scraped from the
# engines) and the request parser are left to the loader's defaults (loader/defaults.go:242-331).
#
# One profile that scores by queue depth, KV-cache use and prefix-cache hits: plugins
# v0.10.0 registers under these names (pkg/epp/framework/plugins/scheduling/scorer/
# queuedepth/queue.go:30, kvcacheutilization/kvcache_utilization.go:29, prefix/
# plugin.go:59; picker/maxscore/picker.go:39; profilehandler/single/
# single_profile_handler.go:30). The
# profile handler and picker are named rather than left to the loader's defaults
# (loader/defaults.go:146-220). llm-d's own plugins are for disaggregated
# prefill/decode pods labelled llm-d.ai/role and for KV events from vLLM; these
# pools are neither.
PICKER_CONFIG: dict[str, Any] = {
    "apiVersion": "llm-d.ai/v1alpha1",
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
            # Every scorer has its weight, chosen here rather than the loader's
            # default of one for each (loader/defaults.go:41-44).
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
            "appProtocol": APP_PROTOCOL,
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
    WithAuthenticationAndAuthorization filter unless --metrics-endpoint-auth is
    turned off (llm-d-router v0.10.0 cmd/epp/runner/runner.go:393-394, on by
    default, pkg/epp/server/options.go:154), which asks the API server to review each
    scraper's token and access: without create on tokenreviews and
    subjectaccessreviews every scrape is refused. Its chart grants exactly these
    (v0.10.0 config/charts/routerlib/templates/_rbac.yaml:11-20).
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
    """ServiceAccount, Role and RoleBinding: read the pool, its pods and its objectives.

    The picker watches the pods the pool selects, the pool, and the pool's
    InferenceObjectives and InferenceModelRewrites; a watch it may not list
    keeps its cache from syncing. llm-d-router moved the two to the group
    ``llm-d.ai`` (its v0.10.0 CRDs, schemas/crds/off-proxy/llm-d-router/v0.10.0) and
    its chart grants them under both groups, with the pool (v0.10.0 config/
    charts/llm-d-router-gateway/templates/rbac.yaml:8-16) and the pods
    (routerlib/templates/_rbac.yaml:50-52). It watches either only where its
    CRD is installed (pkg/epp/server/controller_manager.go:44-58).
    """
    name = picker_name(workload)
    read = ["get", "list", "watch"]
    objectives = ["inferenceobjectives", "inferencemodelrewrites"]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": pods.metadata(workload, name),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
            {"apiGroups": [OBJECTIVE_GROUP], "resources": objectives, "verbs": read},
            {"apiGroups": [LEGACY_OBJECTIVE_GROUP], "resources": objectives, "verbs": read},
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
        # v0.10.0 pkg/epp/server/options.go:173-177,237 (pool, config file) and the zap
        # flags (pkg/common/observability/logging/options.go:29).
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
