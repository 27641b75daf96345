"""KubeRay: a ``ray.io/v1`` RayService serving vLLM through Ray Serve LLM.

The RayService holds a Ray cluster (a head that runs no model, one GPU worker
pod per replica) and a Serve application built by ``ray.serve.llm``'s OpenAI
app: one LLM whose ``model_id`` is the served model name, loaded from
``spec.model.name``, with as many Serve replicas as this cluster holds and
tensor parallelism over each replica's GPUs. The user's engine flags become
vLLM ``engine_kwargs`` (``--max-model-len 8192`` → ``max_model_len: 8192``).
KubeRay fronts the application with ``<name>-serve-svc`` on port 8000, which
the route targets.

Overrides are not taken: the RayService's shape (head, worker group, Serve
config) is what makes the replica count and GPU accounting true.
Pinned to KubeRay v1.7.0 (the CRD the clusters run) and Ray 2.46.
"""

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from fleetgate.core.models import EngineType, ServingProvider
from fleetgate.core.observed import Observed
from fleetgate.core.readiness import condition_query
from fleetgate.model_deployment import engine as engines
from fleetgate.model_deployment import naming
from fleetgate.model_deployment.overrides import Strict
from fleetgate.model_deployment.providers import pods
from fleetgate.model_deployment.providers.base import (
    Manifest,
    RemotePart,
    Rendered,
    Renderer,
    Workload,
)

API_VERSION = "ray.io/v1"
RAY_VERSION = "2.46.0"
IMAGE = f"rayproject/ray-llm:{RAY_VERSION}-py311-cu124"
SERVE_PORT = 8000
PART = "rayservice"
WORKER_GROUP = "gpu-workers"
# KubeRay derives the RayCluster (<name>-<5 chars>) and from it Services and
# pod labels (<cluster>-head-svc), which must stay DNS labels.
NAME_MAX = 40
# Flags Fleetgate owns here: the model and the name it answers to.
OWNED_FLAGS = ("model", "served-model-name", "served_model_name", "tensor-parallel-size")


def service_name(workload: Workload) -> str:
    return naming.fitted(workload.name, NAME_MAX)


def serve_config(workload: Workload) -> tuple[str, tuple[str, ...]]:
    """``serveConfigV2`` (JSON, which is YAML) and notes on how the engine flags were taken."""
    flags, positionals = engines.flag_values(workload.engine.args, workload.served)
    kwargs: dict[str, Any] = {
        key.replace("-", "_"): value for key, value in flags.items() if key not in OWNED_FLAGS
    }
    kwargs["tensor_parallel_size"] = max(workload.gpus, 1)
    llm = {
        "model_loading_config": {"model_id": workload.served, "model_source": workload.model},
        "deployment_config": {
            "autoscaling_config": {
                "min_replicas": workload.replicas,
                "max_replicas": workload.replicas,
            }
        },
        "engine_kwargs": dict(sorted(kwargs.items())),
    }
    app = {
        "name": "llm",
        "route_prefix": "/",
        "import_path": "ray.serve.llm:build_openai_app",
        "args": {"llm_configs": [llm]},
    }
    notes = (
        (
            "KubeRay passes spec.engine.args to vLLM as engine_kwargs: positional arguments "
            f"are not passed ({len(positionals)} ignored)",
        )
        if positionals
        else ()
    )
    return json.dumps({"applications": [app]}, sort_keys=True), notes


def _container(workload: Workload, name: str, *ports: tuple[str, int]) -> dict[str, Any]:
    run = workload.engine
    container: dict[str, Any] = {
        "name": name,
        "image": run.image,
        "env": [{"name": k, "value": v} for k, v in run.env],
    }
    if ports:
        container["ports"] = [
            {"name": port_name, "containerPort": port, "protocol": "TCP"}
            for port_name, port in ports
        ]
    return container


def _template(workload: Workload, container: dict[str, Any], gpus: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container]}
    if gpus:
        pods.gpu_pod(workload, spec)
    return {"metadata": {"labels": dict(workload.labels)}, "spec": spec}


def ray_service(workload: Workload) -> tuple[Manifest, tuple[str, ...]]:
    config, notes = serve_config(workload)
    head = _container(
        workload,
        "ray-head",
        ("gcs", 6379),
        ("dashboard", 8265),
        ("client", 10001),
        ("serve", SERVE_PORT),
    )
    worker = pods.with_gpus(workload, _container(workload, "ray-worker"))
    n = workload.replicas
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "RayService",
        "metadata": pods.metadata(workload, service_name(workload)),
        "spec": {
            "serveConfigV2": config,
            "rayClusterConfig": {
                "rayVersion": RAY_VERSION,
                "headGroupSpec": {
                    # The head schedules no model replica: its CPUs are not offered.
                    "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
                    "template": _template(workload, head, gpus=False),
                },
                "workerGroupSpecs": [
                    {
                        "groupName": WORKER_GROUP,
                        "replicas": n,
                        "minReplicas": n,
                        "maxReplicas": n,
                        "rayStartParams": {},
                        "template": _template(workload, worker, gpus=workload.gpus > 0),
                    }
                ],
            },
        },
    }
    return manifest, notes


class NoOverrides(Strict):
    """KubeRay takes no overrides: any root is refused by name."""


class KubeRay(Renderer):
    name: ServingProvider = "KubeRay"
    overrides: type[BaseModel] = NoOverrides

    def default_image(self, engine: EngineType) -> str | None:
        return IMAGE

    def render(self, workload: Workload) -> Rendered:
        manifest, notes = ray_service(workload)
        return Rendered(
            # Ready is stamped with status.observedGeneration, set to the
            # generation first (kuberay v1.7.0 ray-operator/controllers/ray/
            # rayservice_controller.go:653, 820-829).
            parts=(RemotePart(PART, manifest, condition_query("Ready")),),
            backend_ref={
                "group": "",
                "kind": "Service",
                "name": f"{service_name(workload)}-serve-svc",
                "port": SERVE_PORT,
            },
            notes=notes,
        )

    def ready_replicas(self, observed: Mapping[str, Observed], replicas: int) -> int:
        return pods.all_or_none(observed, PART, "Ready", replicas)
