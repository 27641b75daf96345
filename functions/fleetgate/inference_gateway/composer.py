"""An InferenceGateway composes the fleet gateway onto the InferenceCluster it names.

Three independent parts, each gated only on what it needs:

* the client PKI, once the cluster is registered: clusters trust this
  gateway through its CA, so it is issued before anything else;
* the front door (Gateway, EnvoyProxy, caller auth, failover, /healthz), once
  its caller keys and TLS Secrets exist and their copies on the cluster hold
  their values; until then whatever it composed before keeps serving, and
  nothing half-open is added. The one exception is the caller keys' copy on
  the cluster: it follows the selected Secrets on every call, whatever else
  waits, so a revoked key never outlives a closed gate;
* CA copies and name resolution for every cluster that has published its
  gateway, once the fleet's clusters (and gateways, for ownership) resolve.
"""

from typing import Any, NamedTuple

from fleetgate.core.constants import SYSTEM_NAMESPACE
from fleetgate.core.governance import (
    ANSWERS_COUNTED,
    AnswerRead,
    answer_reads,
    answers_counted,
    hold_rate_limits,
)
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.kinds.gateway import InferenceGateway
from fleetgate.core.objects import Manifest, remote_object
from fleetgate.core.observed import PATCH_PENDING, configmap_value, patch_applied
from fleetgate.core.pki import BUNDLE_KEY
from fleetgate.core.reconcile import Reconcile
from fleetgate.core.secrets import secret_patch
from fleetgate.core.verdict import Verdict
from fleetgate.inference_gateway import builders, inputs, naming, resolution
from fleetgate.inference_gateway.inputs import CallerKeys, FrontDoor, Target
from fleetgate.inference_gateway.naming import GatewayNames
from fleetgate.inference_gateway.resolution import Peer, PublishedCluster
from fleetgate.inference_gateway.status import gateway_address, gateway_ready, models_routed

CONDITION = "GatewayReady"
# Envoy Gateway's reason for a patch it could not apply, a JSONPath that found
# nothing included (internal/gatewayapi/status/envoypatchpolicy.go:38-43 at v1.8.3).
INVALID_PATCH = "Invalid"
# Whether backends (third parties above all) are kept from the caller's address.
ADDRESS_CONDITION = "CallerAddressHidden"
CALLERS_CONDITION = "CallerKeysUnique"
CLIENT_USAGES = ["client auth", "digital signature"]


def compose(rec: Reconcile) -> None:
    gateway = rec.composite(InferenceGateway)
    names = GatewayNames(gateway.metadata.name)
    target = inputs.target(rec, gateway)
    callers = inputs.caller_keys(rec, gateway)
    front_door = inputs.front_door(rec, gateway, callers)
    clusters = inputs.clusters(rec)
    peers = inputs.peers(rec)
    if isinstance(target, Verdict):
        _hold(rec, target)
        _report(rec, gateway, names, target)
        return
    on = OnCluster(rec, names, target)
    on.client_pki()
    if isinstance(front_door, Verdict):
        on.hold_front_door(front_door, callers)
    else:
        waiting = on.front_door(gateway, front_door)
        if waiting is not None:
            front_door = waiting
    reachable = None if clusters is None else _reachable(rec, clusters)
    if clusters is not None and reachable is not None and len(reachable) < len(clusters):
        # A cluster still publishing its hostname and CA joins on a later call
        # (they are required resources): ask again soon (core.pacing).
        rec.set_waiting(True)
    on.cluster_cas(reachable)
    on.name_resolution(reachable, peers, inputs.as_peer(gateway))
    if isinstance(front_door, Verdict):
        _report(rec, gateway, names, front_door)
    else:
        _report(rec, gateway, names, None, front_door.callers)
    _report_mutual_tls(rec, reachable)
    _report_callers(rec, callers)


def _report_callers(rec: Reconcile, callers: CallerKeys | Verdict | None) -> None:
    """CallerKeysUnique: False, naming the Secrets, while a caller identity is claimed twice.

    Allow-lists and budgets are bound to the identity, so no key is picked:
    neither authenticates (``inputs.caller_keys``) until one is renamed.
    """
    if not isinstance(callers, CallerKeys):
        return
    if not callers.ambiguous:
        rec.condition(
            CALLERS_CONDITION,
            "True",
            "Unique",
            f"{len(callers.sources)} callers, each a key of one selected Secret",
        )
        return
    claims = "; ".join(
        f"{identity} in "
        + " and ".join(f"Secret {SYSTEM_NAMESPACE}/{secret}" for secret in secrets)
        for identity, secrets in callers.ambiguous.items()
    )
    rec.report(
        CALLERS_CONDITION,
        Verdict(
            "False",
            "DuplicateCaller",
            f"caller identities are keys of more than one selected Secret ({claims}): none of "
            "those keys authenticates until each identity is a key of one Secret only",
            warn=True,
        ),
    )


def _report_mutual_tls(rec: Reconcile, reachable: list[PublishedCluster] | None) -> None:
    """status.reachableClusters: where this gateway's Backends resolve, as observed.

    A Backend to a cluster names this gateway's copy of the cluster's CA and
    its client certificate Secret; until both exist on the gateway's cluster
    Envoy Gateway cannot resolve it and sends a share of the route's traffic
    to a 500. The copies are ready once created; the Certificate once
    cert-manager issued its Secret. Clusters not resolved yet: the last
    published list stands.
    """
    if reachable is None:
        previous = rec.observed_composite.get("status", "reachableClusters")
        if isinstance(previous, list):
            rec.set_status(reachableClusters=previous)
        return
    ready = rec.observed(naming.CLIENT_CERTIFICATE).ready
    rec.set_status(
        reachableClusters=sorted(
            c.name
            for c in reachable
            if ready and c.ca_certificate and rec.observed(naming.cluster_ca_key(c.name)).ready
        )
    )


def _hold(rec: Reconcile, blocked: Verdict, *prefixes: str) -> None:
    """A gate is closed: keep what the gated part composed before, and say what is missing."""
    rec.keep_all(*prefixes)
    rec.warning(f"gateway not (fully) served: {blocked.message}", blocked.reason)


def _reachable(rec: Reconcile, clusters: list[InferenceCluster]) -> list[PublishedCluster]:
    """Clusters this gateway can reach by name; the ones it cannot are named in a warning."""
    usable, unusable = resolution.published(clusters)
    for cluster in unusable:
        rec.warning(
            f"InferenceCluster {cluster.name} is not reachable by name: {cluster.why}",
            "ClusterUnreachable",
        )
    return usable


class OnCluster(NamedTuple):
    """Composing this gateway's objects onto its cluster."""

    rec: Reconcile
    names: GatewayNames
    target: Target

    def put(
        self,
        key: str,
        manifest: Manifest,
        *,
        observe_only: bool = False,
        secret_patches: list[dict[str, Any]] | None = None,
        reported: bool = False,
    ) -> None:
        """Compose ``manifest`` as a remote Object; ready once Crossplane saw it ready.
        ``reported``: its status is read back for a condition, though it is ready once made
        (an EnvoyPatchPolicy)."""
        obj = remote_object(
            manifest=manifest,
            provider_config=self.target.provider_config,
            namespace=SYSTEM_NAMESPACE,
            observe_only=observe_only,
            secret_patches=secret_patches,
            # The Gateway's address and Programmed, the CA ConfigMap and the
            # caller policy's status are read back: see them as they change.
            # A patch's status is too: polled, it would reach its condition up
            # to provider-kubernetes' poll interval (10 minutes) late.
            watch=True if reported else None,
        )
        self.rec.compose(key, obj, ready=True if self.rec.observed(key).ready else None)

    def client_pki(self) -> None:
        ca = self.names.client_ca
        for role, manifest in ca.manifests().items():
            self.put(naming.pki_key(role), manifest)
        leaf = ca.leaf(
            self.names.client_certificate, subject=self.names.client_subject, usages=CLIENT_USAGES
        )
        self.put(naming.CLIENT_CERTIFICATE, leaf)
        # trust-manager owns the ConfigMap; observing it is how the CA
        # certificate (never its key: that stays in a Secret nothing
        # observes) reaches status. Observed only once the Bundle is Synced,
        # i.e. trust-manager wrote it: an Object observing what does not exist
        # is requeued with exponential backoff (crossplane-runtime
        # v2.0.0-rc.1 pkg/reconciler/managed/reconciler.go:1136-1142), which
        # held a gateway's CA back ~30 s on the real control plane.
        key = naming.CLIENT_CA_CONFIGMAP
        if self.rec.observed(key).exists or self.rec.observed(naming.pki_key("ca-bundle")).ready:
            self.put(key, ca.published(), observe_only=True)

    def front_door(self, gateway: InferenceGateway, inputs: FrontDoor) -> Verdict | None:
        """The front door, once the Secrets it serves from hold their values on the cluster.

        A projected Secret is created empty and filled on the next apply
        (core/secrets). Envoy Gateway reads it at once: an https listener over
        an empty certificate goes down, and two or more callers' empty keys
        read as duplicates, so it refuses the caller policy and answers 500.
        Until every projected Secret is filled, the serving objects stay as
        composed before; a gateway composing them for the first time waits,
        and the Verdict returned says for what. So with caller limits taking more
        rate-limit rules than one policy holds (``hold_rate_limits``).
        """
        names = self.names
        projected = {naming.tls_key(source): self.tls_secret(source) for source in inputs.tls or []}
        callers = inputs.callers
        if callers is not None:
            projected[naming.CALLER_KEYS] = self.caller_secret(callers)
        unfilled = [name for key, name in projected.items() if not self.rec.observed(key).ready]
        if unfilled:
            if self.rec.keep_all(*naming.SERVING):
                return None
            listed = ", ".join(f"{SYSTEM_NAMESPACE}/{name}" for name in sorted(unfilled))
            return Verdict.no(
                "WaitingForSecrets",
                f"waiting for provider-kubernetes to fill the Secret copies {listed} on "
                f"InferenceCluster {gateway.spec.cluster_name}: the gateway serves from them "
                "once they hold their values",
            )
        # Limits the API server would refuse keep the failover policy composed
        # before (retries, outlier detection, limits); a gateway that never had
        # one is not served rather than served without them.
        held = hold_rate_limits(
            self.rec,
            naming.FAILOVER,
            "spec.auth.limits",
            inputs.limits,
            f"InferenceGateway {gateway.metadata.name}",
        )
        if held is not None and not held.kept:
            return held.verdict
        tls_copies = [projected[naming.tls_key(source)] for source in inputs.tls or []]
        self.put(naming.ENVOY_PROXY, builders.envoy_proxy(names))
        listeners = builders.gateway(
            names,
            gateway_class=self.target.gateway_class,
            hostname=gateway.spec.hostname,
            tls_secrets=tls_copies,
        )
        self.put(naming.GATEWAY, listeners)
        listener_names = [listener["name"] for listener in listeners["spec"]["listeners"]]
        hidden = builders.address_hidden(names, listener_names)
        self.put(naming.ADDRESS_HIDDEN, hidden, reported=True)
        self.put(naming.LISTENER_POLICY, builders.listener_policy(names, gateway.spec.limits))
        if held is None:
            failover = builders.failover_policy(
                names, gateway.spec.failover, gateway.spec.limits, inputs.limits
            )
            self.put(naming.FAILOVER, failover)
            self.answers_counted(listener_names[-1], answer_reads(inputs.limits))
        else:
            self.rec.keep(naming.ANSWERS_COUNTED)
        self.put(naming.HEALTHZ_FILTER, builders.healthz_filter(names))
        self.put(naming.HEALTHZ_ROUTE, builders.healthz_route(names))
        if callers is not None:
            self.put(naming.CALLER_AUTH, builders.caller_auth(names, projected[naming.CALLER_KEYS]))
            self.put(naming.HEALTHZ_AUTH, builders.healthz_open(names))
        return None if held is None else held.verdict

    def answers_counted(self, listener: str, reads: list[AnswerRead]) -> None:
        """The patch counting every answer on ``listener`` (the last: https with TLS)
        against the callers' shared token and cost limits, and its condition.

        Until a model is routed there no route carries the limits, and Envoy
        Gateway reports the patch Invalid, as it finds nothing to change
        (``governance.answer_patches``): nothing is left uncounted then.
        """
        if reads:
            counted = builders.answers_counted(self.names, listener, reads)
            self.put(naming.ANSWERS_COUNTED, counted, reported=True)
        policy = self.rec.observed(naming.ANSWERS_COUNTED).remote if reads else None
        verdict = answers_counted(policy, "spec.auth.limits")
        # Only the refusal a patch with nothing to change gets, or none yet: a patch
        # refused outright (Disabled) is said whatever is routed.
        unmatched = verdict.reason in (INVALID_PATCH, PATCH_PENDING.reason)
        routed = models_routed(self.rec.observed(naming.GATEWAY).remote, listener)
        if unmatched and not routed:
            verdict = Verdict("True", "NoModelRouted", f"no model is routed on {listener} yet")
        self.rec.report(ANSWERS_COUNTED, verdict)

    def hold_front_door(self, blocked: Verdict, callers: CallerKeys | Verdict | None) -> None:
        """A front-door gate is closed: keep what it served from, but never a revoked key.

        A caller-key copy that exists follows the selected Secrets even so:
        kept as it was, it would still name a deleted Secret, and
        provider-kubernetes, which cannot read it, would stop updating the copy
        at all (v1.2.1 internal/controller/namespaced/object/object.go:376-381,
        688-708), so every old key would go on authenticating. With no key
        left the copy is emptied and the kept policy denies every caller.
        """
        if isinstance(callers, CallerKeys) and self.rec.observed(naming.CALLER_KEYS).exists:
            self.caller_secret(callers)
            _hold(self.rec, blocked, *naming.SERVING, naming.TLS)
        else:
            _hold(self.rec, blocked, *naming.FRONT_DOOR)

    def tls_secret(self, source: str) -> str:
        remote = self.names.tls(source)
        refs = [
            secret_patch(secret=source, namespace=SYSTEM_NAMESPACE, key=key)
            for key in inputs.TLS_CERT_KEYS
        ]
        manifest = builders.projected_secret(remote, self.names, type_="kubernetes.io/tls")
        self.put(naming.tls_key(source), manifest, secret_patches=refs)
        return remote

    def caller_secret(self, callers: CallerKeys) -> str:
        """Project every caller key into one Secret; its remote name, for the policy.

        One Secret under one name for the gateway's life: provider-kubernetes
        applies server-side as the Object's own field manager, with forced
        ownership (v1.2.1 internal/controller/namespaced/object/syncer.go:
        131-137), so a key the next apply leaves out (a revoked caller) is
        removed from the Secret on the cluster, as ``make e2e``'s revocation
        drill checks. The policy therefore never names a Secret that is not
        there, and a revocation is one apply.
        """
        remote = self.names.caller_keys
        refs = [
            secret_patch(secret=source, namespace=SYSTEM_NAMESPACE, key=identity)
            for identity, source in callers.sources.items()
        ]
        manifest = builders.projected_secret(remote, self.names, type_="Opaque")
        self.put(naming.CALLER_KEYS, manifest, secret_patches=refs)
        return remote

    def cluster_cas(self, reachable: list[PublishedCluster] | None) -> None:
        """This gateway's copy of each published cluster's CA, which its Backends trust."""
        if reachable is None:
            self.rec.keep_all(naming.CLUSTER_CA)
            return
        for cluster in reachable:
            if cluster.ca_certificate:
                manifest = resolution.cluster_ca(cluster, self.names)
                self.put(naming.cluster_ca_key(cluster.name), manifest)
            else:
                self.rec.warning(
                    f"InferenceCluster {cluster.name} published a hostname but no CA "
                    "certificate: its endpoints cannot be reached over mutual TLS from here",
                    "ClusterCAMissing",
                )

    def name_resolution(
        self, reachable: list[PublishedCluster] | None, peers: list[Peer] | None, me: Peer
    ) -> None:
        """The Services making each cluster's hostname resolve, if this gateway owns them."""
        if reachable is None or peers is None:
            self.rec.keep_all(naming.RESOLVE)
            return
        if resolution.resolver(me, peers) != me.name:
            return
        for cluster in reachable:
            self.put(naming.resolve_key(cluster.name), resolution.service(cluster, self.names))
            if cluster.family is not None:
                key = naming.resolve_slice_key(cluster.name, cluster.family)
                self.put(key, resolution.endpoint_slice(cluster, self.names))


def _report(
    rec: Reconcile,
    gateway: InferenceGateway,
    names: GatewayNames,
    blocked: Verdict | None,
    callers: CallerKeys | None = None,
) -> None:
    """Status from what Crossplane observed, and GatewayReady saying what is still missing."""
    observed_gateway = rec.observed(naming.GATEWAY).remote
    address = gateway_address(observed_gateway)
    spec = gateway.spec
    status: dict[str, Any] = {}
    if address:
        status["address"] = address
    ca = configmap_value(rec.observed(naming.CLIENT_CA_CONFIGMAP), BUNDLE_KEY)
    if ca:
        status["clientCACertificate"] = ca
    endpoints = builders.endpoints(
        hostname=spec.hostname, tls=spec.tls is not None, address=address
    )
    if endpoints:
        status["endpoints"] = endpoints
    rec.set_status(**status)
    ready = gateway_ready(
        blocked=blocked,
        gateway=observed_gateway,
        caller_auth=rec.observed(naming.CALLER_AUTH).remote,
        auth=spec.auth is not None,
        where=f"Gateway {names.gateway} on InferenceCluster {spec.cluster_name}",
        callers=callers,
        keys_filled=rec.observed(naming.CALLER_KEYS).ready,
    )
    rec.report(CONDITION, ready)
    rec.allow_ready(ready.status == "True")
    hidden = patch_applied(
        rec.observed(naming.ADDRESS_HIDDEN).remote,
        "removing the caller's address (x-envoy-external-address) from forwarded requests",
        "no backend receives the caller's address",
    )
    rec.report(ADDRESS_CONDITION, hidden)
