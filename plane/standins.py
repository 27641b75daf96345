"""The workload clusters' controllers that cannot run here, played by one small loop.

Only what those controllers write, on the objects they own, nothing else:

cert-manager (its controller is a nested Go module the proxy does not serve)
  Issuer: condition Ready=True (reason ``IsReady`` for selfSigned,
  ``KeyPairVerified`` for ca, once the CA Secret exists). Certificate: the
  Secret ``spec.secretName`` (type kubernetes.io/tls; tls.crt, tls.key,
  ca.crt; the cert-manager.io/* annotations), issued by its Issuer, and
  condition Ready=True reason ``Ready`` with notBefore/notAfter/revision.
  As cert-manager runs for Fleetgate, with ``--enable-certificate-owner-ref``
  (the stack sets it; docs/contract.md requires it): the Secret's controller
  owner reference is its Certificate (pkg/controller/certificates/issuing/
  internal/secret.go:116-123, v1.21.2), so the garbage collector deletes
  a key with the Certificate that asked for it.
A cloud's load balancer controller
  Service of type LoadBalancer that Envoy Gateway provisions for a Gateway
  (labelled gateway.envoyproxy.io/owning-gateway-name, internal/gatewayapi/
  translator.go:36-41, v1.8.3): status.loadBalancer.ingress, one hostname or
  IP, the address examples/fleet/world/world.yaml gives the cluster's load
  balancers (as the offline walk). Envoy Gateway copies it to the Gateway's
  status.addresses (internal/gatewayapi/status/gateway.go:224-240).
The Deployment controller and kubelet
  Deployment: replicas ready and Available (Envoy Gateway's own EnvoyProxy
  Deployments included: it programs a Gateway once one is available).

Every other condition carries the object's generation as observedGeneration,
as each of those controllers writes it. trust-manager, Envoy Gateway and
Envoy AI Gateway are not here: they run for real (workloads.py,
envoygateway.py, aigateway.py).
"""

import base64
import datetime
import ipaddress
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from plane.clusters import Cluster
from plane.kube import ApiError, Obj, controller_ref, is_true
from sim import pki
from sim.controllers import World
from sim.loop import without_times

INTERVAL_S = 1.0
# How long a watch runs before it starts again and its kind's passes run once regardless.
WATCH_S = 60
CERT_MANAGER = "cert-manager.io/v1"
OWNING_GATEWAY = "gateway.envoyproxy.io/owning-gateway-name"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(obj: Obj, type_: str, reason: str, message: str = "") -> Obj:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message,
        "observedGeneration": obj["metadata"].get("generation", 1),
        "lastTransitionTime": _now(),
    }


@dataclass
class Controllers:
    cluster: Cluster
    world: World
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    # Kinds written since their passes last ran (WATCHED), and a wake-up for the loop.
    _dirty: set[str] = field(default_factory=set)
    _changed: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> threading.Thread:
        for api_version, kind in WATCHED:
            threading.Thread(
                target=self._watch,
                args=(api_version, kind),
                daemon=True,
                name=f"watch-{self.cluster.name}-{kind}",
            ).start()
        thread = threading.Thread(
            target=self._loop, daemon=True, name=f"controllers-{self.cluster.name}"
        )
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()

    def _loop(self) -> None:
        """Each pass when a kind it reads was written, as a controller's informers wake
        it, at most once a second: listing every kind every second, whether anything
        changed or not, cost each workload API server about 6 CPU seconds a minute with
        100 services at rest (bench/results/fleet-before-pool.json, issue 35)."""
        while not self._stop.wait(INTERVAL_S):
            self._changed.wait()
            with self._lock:
                dirty, self._dirty = self._dirty, set()
                self._changed.clear()
            if not self._stop.is_set():
                self.round(dirty)

    def _watch(self, api_version: str, kind: str) -> None:
        """Mark ``kind`` dirty on each write to it, and once each time the watch starts
        again (what happened in between is what the next pass lists): every WATCH_S,
        as an informer resyncs, or after an error."""
        kube = self.cluster.admin
        while not self._stop.is_set():
            try:
                since = kube.resource_version(api_version, kind)
                self._mark(kind)
                for _ in kube.watch(api_version, kind, "", since, WATCH_S):
                    self._mark(kind)
            except Exception as err:  # a watch that died would stop its passes for good
                if not isinstance(err, ApiError | OSError | ValueError):
                    self.errors.append(f"{self.cluster.name} watch of {kind}: {err!r}")
                    del self.errors[:-20]
                self._mark(kind)
                self._stop.wait(INTERVAL_S)

    def _mark(self, kind: str) -> None:
        with self._lock:
            self._dirty.add(kind)
            self._changed.set()

    def round(self, dirty: set[str] | None = None) -> None:
        """One pass over each kind played here whose inputs were written (``dirty``;
        None: every kind): write each status that would change."""
        kube = self.cluster.admin
        for p in PASSES:
            if dirty is not None and not {kind for _, kind in p.reads} & dirty:
                continue
            try:
                for obj in kube.list(*p.kind):
                    status = p.realise(self, obj)
                    if status is not None and status != obj.get("status"):
                        kube.update_status({**obj, "status": status})
            except (ApiError, OSError) as err:  # retried next round
                self._mark(p.kind[1])
                if not (isinstance(err, ApiError) and err.status in (404, 409)):
                    self.errors.append(f"{self.cluster.name} {p.kind[1]}: {err}")
                    del self.errors[:-20]

    # --- cert-manager ------------------------------------------------------------

    def issuer(self, obj: Obj) -> Obj | None:
        spec = obj.get("spec") or {}
        if "selfSigned" in spec:
            return self._keep(obj, [_cond(obj, "Ready", "IsReady")])
        if "ca" in spec:
            ns = obj["metadata"]["namespace"]
            if self.cluster.admin.get("v1", "Secret", spec["ca"]["secretName"], ns) is None:
                return None
            return self._keep(obj, [_cond(obj, "Ready", "KeyPairVerified", "Signing CA verified")])
        return None

    def certificate(self, obj: Obj) -> Obj | None:
        if is_true(obj, "Ready") and _current(obj):
            return None
        kube = self.cluster.admin
        ns = obj["metadata"]["namespace"]
        spec = obj["spec"]
        issuer = kube.get(CERT_MANAGER, "Issuer", spec["issuerRef"]["name"], ns)
        if not is_true(issuer, "Ready"):
            return None
        assert issuer is not None
        cn = str(spec.get("commonName") or (spec.get("dnsNames") or [obj["metadata"]["name"]])[0])
        if "selfSigned" in issuer["spec"]:
            pair = pki.ca(cn[:64])
            ca_pem = pair.cert_pem
        else:
            ca_secret = kube.get("v1", "Secret", issuer["spec"]["ca"]["secretName"], ns)
            if ca_secret is None:
                return None
            data = ca_secret["data"]
            signer = pki.load(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))
            usages = spec.get("usages") or ["digital signature", "key encipherment"]
            pair = pki.leaf(
                signer,
                cn[:64],
                server="server auth" in usages or "client auth" not in usages,
                dns=tuple(spec.get("dnsNames") or ()),
            )
            ca_pem = signer.cert_pem
        kube.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": spec["secretName"],
                    "namespace": ns,
                    "ownerReferences": [controller_ref(obj)],
                    "annotations": {
                        "cert-manager.io/certificate-name": obj["metadata"]["name"],
                        "cert-manager.io/common-name": cn,
                        "cert-manager.io/issuer-name": issuer["metadata"]["name"],
                        "cert-manager.io/issuer-kind": "Issuer",
                        "cert-manager.io/issuer-group": "cert-manager.io",
                    },
                },
                "type": "kubernetes.io/tls",
                "data": {
                    "tls.crt": base64.b64encode(pair.cert_pem).decode(),
                    "tls.key": base64.b64encode(pair.key_pem).decode(),
                    "ca.crt": base64.b64encode(ca_pem).decode(),
                },
            },
            manager="cert-manager-certificates-issuing",
        )
        status = dict(obj.get("status") or {})
        status.update(
            {
                "conditions": [
                    _cond(obj, "Ready", "Ready", "Certificate is up to date and has not expired")
                ],
                "notBefore": pair.cert.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "notAfter": pair.cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "revision": int(status.get("revision", 0)) + 1,
            }
        )
        return status

    # --- Envoy Gateway and AI Gateway -------------------------------------------------

    def load_balancer(self, obj: Obj) -> Obj | None:
        labels = obj["metadata"].get("labels") or {}
        gateway = labels.get(OWNING_GATEWAY)
        if obj["spec"].get("type") != "LoadBalancer" or gateway is None:
            return None
        address = self.world.address(self.cluster.name, gateway)
        try:
            ipaddress.ip_address(address)
            kind = "ip"
        except ValueError:
            kind = "hostname"
        return self._stable(obj, {"loadBalancer": {"ingress": [{kind: address}]}})

    def deployment(self, obj: Obj) -> Obj | None:
        replicas = (obj.get("spec") or {}).get("replicas", 1)
        status = {
            "observedGeneration": obj["metadata"].get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            # DeploymentCondition has no observedGeneration (status has it), and a
            # lastUpdateTime beside lastTransitionTime (kubernetes v1.35.4
            # pkg/controller/deployment/util/deployment_util.go:104-113): left out,
            # the API server stores it as null, which never equals what is written
            # here, so every round rewrote the status and provider-kubernetes, which
            # watches the Deployment, woke its XR about once a second.
            "conditions": [
                {
                    **{
                        k: v
                        for k, v in _cond(obj, type_, reason, message).items()
                        if k != "observedGeneration"
                    },
                    "lastUpdateTime": _now(),
                }
                for type_, reason, message in (
                    (
                        "Available",
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability.",
                    ),
                    (
                        "Progressing",
                        "NewReplicaSetAvailable",
                        "ReplicaSet has successfully progressed.",
                    ),
                )
            ],
        }
        return self._stable(obj, status)

    # --- stability ------------------------------------------------------------------
    # A controller rewrites a condition only when its status or generation changes;
    # lastTransitionTime stays, so nothing here makes an update that changes nothing.

    def _keep(self, obj: Obj, conditions: list[Obj]) -> Obj | None:
        return self._stable(obj, {**(obj.get("status") or {}), "conditions": conditions})

    def _stable(self, obj: Obj, status: Obj) -> Obj | None:
        if without_times(status) == without_times(obj.get("status") or {}):
            return None
        return status


Kind = tuple[str, str]  # (apiVersion, kind)
ISSUER, CERTIFICATE, SECRET = (
    (CERT_MANAGER, "Issuer"),
    (CERT_MANAGER, "Certificate"),
    ("v1", "Secret"),
)


class Pass(NamedTuple):
    """One kind played here: ``realise`` gives each object's status (None: leave it). The
    pass runs when its kind, or one it ``also_reads``, was written."""

    kind: Kind
    realise: Callable[[Controllers, Obj], Obj | None]
    also_reads: frozenset[Kind] = frozenset()

    @property
    def reads(self) -> frozenset[Kind]:
        return self.also_reads | {self.kind}


PASSES = [
    Pass(ISSUER, Controllers.issuer, frozenset({SECRET})),
    Pass(CERTIFICATE, Controllers.certificate, frozenset({ISSUER, SECRET})),
    Pass(("v1", "Service"), Controllers.load_balancer),
    Pass(("apps/v1", "Deployment"), Controllers.deployment),
]
# Every kind a pass reads: a watch each.
WATCHED = sorted({kind for p in PASSES for kind in p.reads})


def _current(obj: Obj) -> bool:
    ready: Obj = next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {}
    )
    return bool(ready.get("observedGeneration") == obj["metadata"].get("generation"))
