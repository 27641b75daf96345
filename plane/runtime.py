"""Crossplane's package runtime, played here: the one part of Crossplane this e2e fakes.

Crossplane runs with ``PACKAGE_RUNTIME=External``: it installs packages,
resolves dependencies, establishes CRDs and RBAC, but leaves running the
packages' code to someone else. In a cluster its Deployment runtime does that
(crossplane v2.2.0 internal/controller/pkg/runtime/runtime_function.go and
runtime_provider.go, ``Pre``/``Post``, and reconciler.go marking
RuntimeHealthy). Here, for each active revision, this module does what those
hooks do, with a process in place of a Deployment's pod:

With the External runtime Crossplane leaves the revisions' TLS Secret names
unset too (the package manager copies them only for its own runtimes:
internal/controller/pkg/manager/reconciler.go WithManagingRevisionRuntimeSpec),
so they are named as it would name them, after the parent package:
``<package>-tls-server`` and ``<package>-tls-client`` (apis/pkg/v1/interfaces.go
GetSecretNameWithSuffix).

FunctionRevision
  - a server certificate signed by Crossplane's root CA (Secret
    ``<package>-tls-server``, keys tls.crt/tls.key/ca.crt);
  - the function's console script serving with it on a loopback port;
  - ``status.tlsServerSecretName``, ``status.endpoint``
    (``dns:///127.0.0.1:<port>`` where upstream writes the Service's DNS name)
    and the condition ``RuntimeHealthy=True``.

ProviderRevision
  - the server and client TLS Secrets, as for functions;
  - a ServiceAccount named after the revision and a Deployment record owned by
    the revision naming it (never run: there is no Deployment controller),
    which is what Crossplane's RBAC manager reads to bind the provider's
    ClusterRole (internal/controller/rbac/provider/binding/reconciler.go);
  - the provider's binary, authenticated as that ServiceAccount, with the
    arguments of its Provider's DeploymentRuntimeConfig: the Provider's, not
    the revision's, because Crossplane copies ``runtimeConfigRef`` onto the
    revision only when it runs Deployments itself (crossplane v2.2.0
    internal/controller/pkg/manager/reconciler.go:182-184, 446-448), so under
    ``PACKAGE_RUNTIME=External`` every revision names ``default``;
  - ``status.tlsServerSecretName``, ``status.tlsClientSecretName`` and
    ``RuntimeHealthy=True``.
"""

import base64
import datetime
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from e2e.functions import console_script, free_port
from plane.clusters import Cluster, binary
from plane.crossplane import NAMESPACE
from plane.kube import ApiError, Obj, controller_ref, is_true
from plane.processes import Process, Supervisor
from sim import pki

PKG = "pkg.crossplane.io/v1"
# Provider package repository (after the registry host) → the binary that runs it here.
PROVIDER_BINARIES = {"crossplane-contrib/provider-kubernetes": "provider-kubernetes"}
FIELD_MANAGER = "fleetgate-e2e-package-runtime"
INTERVAL_S = 1.0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class PackageRuntime:
    sup: Supervisor
    cp: Cluster
    state: Path
    function_args: list[str] = field(default_factory=list)  # e.g. --debug (bench/fleetscale.py)
    started: dict[str, Process] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    certs: dict[str, Path] = field(default_factory=dict)
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="package-runtime")
        self._thread.start()
        self.sup.on_stop.append(self.stop)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            active: set[str] | None = set()
            for kind, realise in (
                ("FunctionRevision", self._function),
                ("ProviderRevision", self._provider),
            ):
                try:
                    for rev in self.cp.admin.list(PKG, kind):
                        if (rev.get("spec") or {}).get("desiredState") == "Active":
                            if active is not None:
                                active.add(rev["metadata"]["name"])
                            realise(rev)
                except (ApiError, OSError) as err:  # retried next round, like a controller
                    self.errors.append(f"{kind}: {err}")
                    del self.errors[:-20]
                    active = None  # not known this round: nothing is deactivated
            if active is not None:
                self._deactivate(active)

    def _deactivate(self, active: set[str]) -> None:
        """Stop each revision's process once the revision is no longer active (a package
        upgraded or rolled back), after its successor was started and reported this round:
        Crossplane's Deactivate hook deletes its Deployment (v2.4.0 internal/controller/
        pkg/runtime/runtime_function.go:159-183)."""
        for revision in [r for r in self.started if r not in active]:
            proc = self.started.pop(revision)
            self.endpoints.pop(revision, None)  # active again: a new address, re-dialled
            self.sup.stop(proc)

    # --- the hooks ----------------------------------------------------------------
    # Pre (TLS Secrets and their names in status) runs for every active revision;
    # Post (the workload) only once Crossplane has established the revision's
    # objects, RevisionHealthy=True (runtime/reconciler.go): a provider started
    # before its CRDs exist exits. A workload that exits is started again, as a
    # pod's container would be; ``restarts`` counts it.

    def _function(self, rev: Obj) -> None:
        name = rev["metadata"]["name"]
        server_secret = _secret_name(rev, "-tls-server")
        if name not in self.certs:
            self.certs[name] = self._tls_secret(rev, server_secret, server=True)
        last = self.started.get(name)
        exit_code = None if last is None else last.popen.poll()
        if name not in self.endpoints or (exit_code is not None and exit_code >= 0):
            # A function that exited by itself may have refused an address taken between
            # choosing and binding it: it gets another, and Crossplane re-dials when
            # status.endpoint changes (crossplane v2.4.0 internal/xfn/function_runner.go:
            # 192-254). One killed by a signal (a crash, the OOM killer, a fault drill) is
            # started again on its address, as a pod comes back behind its Service, whose
            # address Crossplane's connection keeps.
            self.endpoints[name] = f"127.0.0.1:{free_port()}"
        fields = {
            "tlsServerSecretName": server_secret,
            "endpoint": f"dns:///{self.endpoints[name]}",
        }
        if not is_true(rev, "RevisionHealthy"):
            self._report(rev, fields, healthy=False)
            return
        script = _repository(rev).rsplit("/", 1)[-1]  # compose-model-endpoint
        self._run(
            name,
            f"function-{script}",
            [
                console_script(script),
                f"--address={self.endpoints[name]}",
                f"--tls-certs-dir={self.certs[name]}",
                *self.function_args,
            ],
            {},
        )
        self._report(rev, fields, healthy=True)

    def _provider(self, rev: Obj) -> None:
        name = rev["metadata"]["name"]
        server_secret = _secret_name(rev, "-tls-server")
        client_secret = _secret_name(rev, "-tls-client")
        if name not in self.certs:
            self.certs[name] = self._tls_secret(rev, server_secret, server=True)
            self._tls_secret(rev, client_secret, server=False)
        fields = {"tlsServerSecretName": server_secret, "tlsClientSecretName": client_secret}
        program = PROVIDER_BINARIES.get(_repository(rev).split("/", 1)[-1])
        if not is_true(rev, "RevisionHealthy") or program is None:
            # No binary for it here (provider-helm): its runtime stays unhealthy, as it would be.
            self._report(rev, fields, healthy=False)
            return
        if name not in self.kubeconfigs:
            self._service_account_and_deployment(rev)
            token = self.cp.admin.token_for(NAMESPACE, name)
            self.kubeconfigs[name] = self.cp.kubeconfig_for_token(f"provider-{name}", token)
        self._run(
            name,
            f"provider-{_repository(rev).rsplit('/', 1)[-1]}",
            [binary(program), *self._runtime_args(rev)],
            {
                "KUBECONFIG": str(self.kubeconfigs[name]),
                "POD_NAMESPACE": NAMESPACE,
                "TLS_SERVER_CERTS_DIR": str(self.certs[name]),
                "HEALTH_PROBE_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
            },
        )
        self._report(rev, fields, healthy=True)

    def _run(self, revision: str, name: str, argv: list[str], env: dict[str, str]) -> None:
        proc = self.started.get(revision)
        if proc is not None and proc.popen.poll() is None:
            return
        if proc is not None:
            self.restarts[name] = self.restarts.get(name, 0) + 1
            self.sup.processes.remove(proc)  # exited: leave only its log
        self.started[revision] = self.sup.start(name, argv, env, restarted_elsewhere=True)

    # --- pieces ------------------------------------------------------------------

    def _tls_secret(self, rev: Obj, secret_name: str, server: bool) -> Path:
        root = self.cp.admin.get("v1", "Secret", "crossplane-root-ca", NAMESPACE)
        if not root or not root.get("data"):
            raise ApiError(404, "GET", "crossplane-root-ca", "core init has not filled it yet")
        ca = pki.load(
            base64.b64decode(root["data"]["tls.crt"]), base64.b64decode(root["data"]["tls.key"])
        )
        with warnings.catch_warnings():
            # Crossplane's root CA names its country "Earth"; cryptography warns on C != 2 letters.
            warnings.filterwarnings("ignore", "Attribute's length", UserWarning)
            pair = pki.leaf(
                ca,
                rev["metadata"]["name"][:64],
                server=server,
                ips=("127.0.0.1",) if server else (),
            )
        data = {"tls.crt": pair.cert_pem, "tls.key": pair.key_pem, "ca.crt": ca.cert_pem}
        self.cp.admin.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": secret_name,
                    "namespace": NAMESPACE,
                    "ownerReferences": [controller_ref(rev)],
                },
                "type": "kubernetes.io/tls",
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
            },
            manager=FIELD_MANAGER,
        )
        into = self.state / "runtime" / secret_name
        into.mkdir(parents=True, exist_ok=True)
        for key, value in data.items():
            (into / key).write_bytes(value)
            (into / key).chmod(0o600)
        return into

    def _service_account_and_deployment(self, rev: Obj) -> None:
        name = rev["metadata"]["name"]
        labels = {"pkg.crossplane.io/revision": name}
        owner = [controller_ref(rev)]
        self.cp.admin.apply(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": owner},
            },
            manager=FIELD_MANAGER,
        )
        self.cp.admin.apply(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": owner},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "serviceAccountName": name,
                            "containers": [
                                {"name": "package-runtime", "image": rev["spec"]["image"]}
                            ],
                        },
                    },
                },
            },
            manager=FIELD_MANAGER,
        )

    def _runtime_args(self, rev: Obj) -> list[str]:
        """The ``package-runtime`` container's args in the revision's Provider's runtime config."""
        parent = (rev["metadata"].get("labels") or {}).get("pkg.crossplane.io/package", "")
        provider = self.cp.admin.get(PKG, "Provider", parent) or {}
        ref = (provider.get("spec") or {}).get("runtimeConfigRef") or {}
        config = self.cp.admin.get(
            "pkg.crossplane.io/v1beta1", "DeploymentRuntimeConfig", ref.get("name", "default")
        )
        template = (((config or {}).get("spec") or {}).get("deploymentTemplate") or {}).get(
            "spec"
        ) or {}
        for container in ((template.get("template") or {}).get("spec") or {}).get(
            "containers"
        ) or []:
            if container.get("name") == "package-runtime":
                return [str(a) for a in container.get("args") or []]
        return []

    def _report(self, rev: Obj, fields: dict[str, str], healthy: bool) -> None:
        status = rev.setdefault("status", {})
        others = [c for c in status.get("conditions") or [] if c.get("type") != "RuntimeHealthy"]
        if all(status.get(k) == v for k, v in fields.items()) and (
            is_true(rev, "RuntimeHealthy") or not healthy
        ):
            return
        status.update(fields)
        if healthy:  # apis/pkg/v1/conditions.go RuntimeHealthy()
            status["conditions"] = [
                *others,
                {
                    "type": "RuntimeHealthy",
                    "status": "True",
                    "reason": "HealthyPackageRevision",
                    "lastTransitionTime": _now(),
                },
            ]
        try:
            self.cp.admin.update_status(rev)
        except ApiError as err:
            if err.status != 409:  # a conflict is retried with a fresh read next round
                raise


def _secret_name(rev: Obj, suffix: str) -> str:
    parent = rev["metadata"]["labels"]["pkg.crossplane.io/package"]
    return str(parent)[: 253 - len(suffix)] + suffix


def _repository(rev: Obj) -> str:
    """The image's repository: ``host/fleetgate/compose-x`` of ``host/...compose-x:v1@sha256:…``."""
    image = str(rev["spec"]["image"]).split("@", 1)[0]
    head, _, last = image.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}"
