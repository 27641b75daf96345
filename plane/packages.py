"""The packages, served by a local OCI registry and installed the way a user installs them.

``make packages`` output (five Functions with their runtime images, and the
Configuration) is pushed with ``crossplane xpkg push`` to a registry on
loopback, under the same repository paths as upstream
(``xpkg.crossplane.io/fleetgate/...``). The two providers the Configuration
depends on are packaged here from what their pinned versions ship:
provider-kubernetes from its module's own ``package/`` folder (crossplane.yaml
and CRDs), provider-helm, whose module the proxy refuses, as its pinned CRDs
alone. An ImageConfig rewrites the upstream prefix to the local registry, so
the unchanged Configuration, its ``dependsOn`` and the install manifests
resolve here. Nothing but the registry's address differs from production.
"""

import json
import socket
import tempfile
from pathlib import Path

import yaml

from e2e.functions import free_port
from package import build
from plane import charts
from plane.clusters import Cluster, binary
from plane.kube import ApiError, Obj, is_true, wait_for
from plane.processes import Supervisor, wait_listening
from sim import pki
from tools import pinned

REPO = Path(__file__).resolve().parents[1]
DIST = REPO / "dist" / "package"
CRDS = REPO / ".cache" / "crds"
UPSTREAM = "xpkg.crossplane.io"
PKG_API = "pkg.crossplane.io/v1"
CONFIGURATION = "fleetgate"


def start_registry(sup: Supervisor, state: Path, ca: pki.KeyPair) -> str:
    d = state / "registry"
    d.mkdir(parents=True, exist_ok=True)
    port = free_port()
    serving = pki.leaf(ca, "registry", server=True, ips=("127.0.0.1",))
    (d / "tls.crt").write_bytes(serving.cert_pem)
    (d / "tls.key").write_bytes(serving.key_pem)
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(d / "data")}},
        "http": {
            "addr": f"127.0.0.1:{port}",
            "tls": {"certificate": str(d / "tls.crt"), "key": str(d / "tls.key")},
        },
    }
    (d / "config.yml").write_text(yaml.safe_dump(config))
    proc = sup.start("registry", [binary("registry"), "serve", str(d / "config.yml")])
    host = f"127.0.0.1:{port}"

    def serving_v2() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_listening(proc, serving_v2, 30, "waiting for the registry")
    return host


def _push(xpkg: Path, ref: str, ca_file: Path) -> None:
    pinned.run(
        [binary("crossplane"), "xpkg", "push", "-f", xpkg, ref],
        what=f"crossplane xpkg push {ref}",
        env={"SSL_CERT_FILE": str(ca_file)},
    )


def _build(root: Path, out: Path) -> Path:
    pinned.run(
        [binary("crossplane"), "xpkg", "build", f"--package-root={root}", f"--package-file={out}"],
        what=f"crossplane xpkg build of {root}",
        cwd=out.parent,  # the CLI looks for ./examples; there are none here
    )
    return out


def _provider_helm_root(into: Path) -> Path:
    """A Provider package holding provider-helm's pinned CRDs: enough to resolve the dependency."""
    (into / "crds").mkdir(parents=True)
    version_dir = _only_version(CRDS / "provider-helm")
    for crd in version_dir.glob("*.yaml"):
        (into / "crds" / crd.name).write_bytes(crd.read_bytes())
    (into / "crossplane.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "meta.pkg.crossplane.io/v1",
                "kind": "Provider",
                "metadata": {"name": "provider-helm"},
            }
        )
    )
    return into


def _only_version(folder: Path) -> Path:
    versions = [p for p in folder.iterdir() if p.is_dir()]
    if len(versions) != 1:
        raise RuntimeError(f"expected one pinned version under {folder}, found {versions}")
    return versions[0]


def dependency_versions() -> dict[str, str]:
    """Package repository → version, from the Configuration's own dependsOn."""
    meta = yaml.safe_load((REPO / "package" / "configuration" / "crossplane.yaml").read_text())
    return {d["package"]: d["version"] for d in meta["spec"]["dependsOn"]}


def publish_fleetgate(registry: str, ca_file: Path, dist: Path = DIST) -> str:
    """Push the functions and the Configuration built into ``dist``; their version."""
    built = json.loads((dist / "packages.json").read_text())
    version = str(built["version"])
    for function, entry in built["functions"].items():
        _push(REPO / entry["package"], f"{registry}/fleetgate/{function}:{version}", ca_file)
    _push(
        dist / f"{CONFIGURATION}-{version}.xpkg",
        f"{registry}/fleetgate/{CONFIGURATION}:{version}",
        ca_file,
    )
    return version


def publish(registry: str, ca_file: Path, work: Path) -> None:
    """Push every package the Configuration needs to the local registry."""
    publish_fleetgate(registry, ca_file)
    versions = dependency_versions()
    pk_repo = f"{UPSTREAM}/crossplane-contrib/provider-kubernetes"
    pk_root = (
        charts.module_dir(
            "github.com/crossplane-contrib/provider-kubernetes",
            REPO / "tools" / "controlplane" / "provider-kubernetes",
        )
        / "package"
    )
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        pk = _build(pk_root, Path(tmp) / "provider-kubernetes.xpkg")
        _push(pk, pk_repo.replace(UPSTREAM, registry) + ":" + versions[pk_repo], ca_file)
        helm_repo = f"{UPSTREAM}/crossplane-contrib/provider-helm"
        helm = _build(_provider_helm_root(Path(tmp) / "provider-helm"), Path(tmp) / "helm.xpkg")
        _push(helm, helm_repo.replace(UPSTREAM, registry) + ":" + versions[helm_repo], ca_file)


def install(cp: Cluster, registry: str) -> None:
    """What docs/install.md tells a platform team to do, against the local registry."""
    cp.admin.apply(
        {
            "apiVersion": "pkg.crossplane.io/v1beta1",
            "kind": "ImageConfig",
            "metadata": {"name": "fleetgate-e2e-local-registry"},
            "spec": {
                "matchImages": [{"type": "Prefix", "prefix": UPSTREAM}],
                "rewriteImage": {"prefix": registry},
            },
        }
    )
    # Install steps 1 and 2: the provider with its runtime config, then the
    # guard that only Crossplane writes ModelRoutes (refusals.py tries it).
    for manifest in ("provider-kubernetes.yaml", "modelroute-guard.yaml"):
        for doc in yaml.safe_load_all((REPO / "package" / "install" / manifest).read_text()):
            if doc:
                cp.admin.apply(doc)
    version = json.loads((DIST / "packages.json").read_text())["version"]
    cp.admin.apply(
        {
            "apiVersion": PKG_API,
            "kind": "Configuration",
            "metadata": {"name": CONFIGURATION},
            "spec": {"package": f"{UPSTREAM}/fleetgate/{CONFIGURATION}:{version}"},
        }
    )


# Installed but never running here: no binary of it can be built (see docs/install.md).
WITHOUT_RUNTIME = {"crossplane-contrib-provider-helm"}


def upgrade(cp: Cluster, version: str) -> None:
    """Move Fleetgate to ``version`` as docs/install.md tells a platform team to: each Function's
    package first, then the Configuration's. Crossplane v2.4 changes an installed
    dependency's version only with its alpha EnableAlphaDependencyVersionUpgrades flag
    (internal/controller/pkg/resolver/reconciler.go:256-262, 320), which the chart leaves
    off, and the Configuration depends on exactly its own version of each function."""
    for function, name in build.function_references(f"{UPSTREAM}/fleetgate").items():
        package = f"{UPSTREAM}/fleetgate/{function}:{version}"
        cp.admin.merge_patch(PKG_API, "Function", name, "", {"spec": {"package": package}})
    package = f"{UPSTREAM}/fleetgate/{CONFIGURATION}:{version}"
    cp.admin.merge_patch(
        PKG_API, "Configuration", CONFIGURATION, "", {"spec": {"package": package}}
    )


def running(cp: Cluster, version: str) -> bool:
    """Whether every Fleetgate package's active revision is ``version``, installed and healthy."""
    revisions = [
        r
        for kind in ("FunctionRevision", "ConfigurationRevision")
        for r in cp.admin.list(PKG_API, kind)
        if (r.get("spec") or {}).get("desiredState") == "Active"
        and "/fleetgate/" in str(r["spec"].get("image", ""))
    ]
    return len(revisions) == len(build.FUNCTIONS) + 1 and all(
        str(r["spec"]["image"]).rsplit(":", 1)[-1] == version
        and is_true(r, "RevisionHealthy")
        and (r["kind"] != "FunctionRevision" or is_true(r, "RuntimeHealthy"))
        for r in revisions
    )


def wait_healthy(cp: Cluster, timeout: float) -> None:
    def all_healthy() -> bool:
        packages = [
            p
            for kind in ("Configuration", "Provider", "Function")
            for p in cp.admin.list(PKG_API, kind)
        ]
        return len(packages) == 1 + len(dependency_versions()) and all(
            is_true(p, "Installed")
            and (is_true(p, "Healthy") or p["metadata"]["name"] in WITHOUT_RUNTIME)
            for p in packages
        )

    wait_for("every package Installed and Healthy", all_healthy, timeout, interval=2)


# The kinds of the pinned set that Fleetgate composes on a workload cluster (or, for
# GatewayClass, that a cluster gateway names). Only these are installed: every CRD
# an API server adds makes the next one slower to establish, and the megabyte-sized
# ones nobody uses (EnvoyProxy aside) would cost the e2e minutes. An Object whose
# kind is missing here fails the e2e (Synced=False, no matches for kind).
COMPOSED_KINDS = frozenset(
    {
        "AIGatewayRoute", "AIServiceBackend", "BackendSecurityPolicy",  # Envoy AI Gateway
        "Certificate", "Issuer", "Bundle",  # cert-manager, trust-manager
        "Backend", "BackendTrafficPolicy", "ClientTrafficPolicy", "EnvoyPatchPolicy",
        "EnvoyProxy", "HTTPRouteFilter", "SecurityPolicy",  # Envoy Gateway
        "GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant",  # Gateway API
        "InferencePool", "InferenceObjective", "InferenceModelRewrite",  # GAIE, llm-d
        "InferenceSet", "RayService", "LeaderWorkerSet",  # serving providers
        "PrometheusRule",  # failover alerts, where a platform runs the Prometheus Operator
    }
)  # fmt: skip


# Envoy Gateway and AI Gateway's controller run here and watch every kind of their
# charts' sets (Envoy Gateway requires e.g. ListenerSet, internal/provider/kubernetes/
# controller.go:2283-2296; AI Gateway indexes QuotaPolicy and MCPRoute before it starts,
# cmd/controller/main.go:516 at v1.1.0).
WHOLE_SETS = frozenset({"envoy-gateway", "envoy-ai-gateway"})


def _wanted(crd_set: str, doc: Obj | None) -> bool:
    if not doc or doc.get("kind") != "CustomResourceDefinition":
        return False
    return crd_set in WHOLE_SETS or doc["spec"]["names"]["kind"] in COMPOSED_KINDS


def installed_crds(workload: Cluster) -> None:
    """The upstream CRDs a workload cluster's stack would have installed, from the pinned set.

    Created, not server-side applied: some are large, and field management of
    those costs the busy machine minutes.
    """
    # The standalone Gateway API set duplicates the one Envoy Gateway bundles.
    skip = {"crossplane", "provider-kubernetes", "provider-helm", "gateway-api"}
    names: list[str] = []
    for folder in sorted(CRDS.iterdir()):
        if folder.name in skip or not folder.is_dir():
            continue
        for path in sorted(_only_version(folder).rglob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if _wanted(folder.name, doc):
                    try:
                        workload.admin.create(doc)
                    except ApiError as err:
                        if err.status != 409:  # already there (make up run twice)
                            raise
                    names.append(doc["metadata"]["name"])
    for name in names:  # a controller started before its CRDs are served exits
        wait_for(
            f"CRD {name} Established on {workload.name}",
            lambda name=name: is_true(
                workload.admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name),
                "Established",
            ),
            120,
        )
