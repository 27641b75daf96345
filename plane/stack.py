"""Bring the whole real control plane up, in order, and describe it.

``bring_up`` returns once every package is Installed and Healthy and each
workload cluster is registered with provider-kubernetes; everything it started
stops when the Supervisor exits.
"""

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from plane import crossplane, packages
from plane.clusters import Cluster, start_cluster, start_etcd
from plane.processes import Supervisor
from plane.runtime import PackageRuntime
from sim import pki

CONTROL_PLANE = "control-plane"
PACKAGES_TIMEOUT_S = 600.0


@dataclass
class Stack:
    cp: Cluster
    workloads: dict[str, Cluster]
    runtime: PackageRuntime
    crossplane: crossplane.Crossplane
    state: Path  # where every process keeps its files
    registry: str  # host:port of the local OCI registry the packages come from
    registry_ca: Path  # the CA its serving certificate is signed by
    timings: dict[str, float] = field(default_factory=dict)


def bring_up(
    sup: Supervisor,
    state: Path,
    workload_names: list[str],
    log: object = print,
    function_args: Sequence[str] = (),
) -> Stack:
    say = log if callable(log) else print
    timings: dict[str, float] = {}
    start = time.monotonic()

    def step(name: str) -> None:
        timings[f"seconds until {name}"] = elapsed = round(time.monotonic() - start, 1)
        say(f"  {elapsed:6.1f}s  {name}")

    etcd = start_etcd(sup, state)
    cp = start_cluster(sup, state, CONTROL_PLANE, etcd)
    workloads = {name: start_cluster(sup, state, name, etcd) for name in workload_names}
    step(f"etcd and {1 + len(workloads)} API servers ready")
    # The workload clusters' CRDs go in while Crossplane installs the packages.
    crds = ThreadPoolExecutor(max_workers=len(workloads) or 1)
    pending = [crds.submit(packages.installed_crds, w) for w in workloads.values()]

    registry_ca = pki.ca("fleetgate e2e registry CA")
    ca_file = state / "registry-ca.crt"
    ca_file.write_bytes(registry_ca.cert_pem)
    registry = packages.start_registry(sup, state, registry_ca)
    packages.publish(registry, ca_file, state)
    step("packages pushed to the local registry")

    core = crossplane.install(sup, cp, state, ca_file)
    step("Crossplane core and RBAC manager started")
    runtime = PackageRuntime(sup, cp, state, function_args=list(function_args))
    runtime.start()
    packages.install(cp, registry)
    packages.wait_healthy(cp, PACKAGES_TIMEOUT_S)
    for future in pending:
        future.result()
    crds.shutdown()
    step("Configuration, Functions and Providers Installed and Healthy")
    return Stack(cp, workloads, runtime, core, state, registry, ca_file, timings)
