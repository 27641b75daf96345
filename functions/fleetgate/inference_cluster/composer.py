"""Register a workload cluster: reach it, give it a CA and a mutually authenticated gateway.

The cluster gateway is the only way into a cluster's models, so it is built to
fail closed: it exists only once the cluster trusts at least one fleet
gateway's client CA, its one listener speaks HTTPS only, and the cluster
publishes the hostname fleet gateways use (which makes it schedulable) only
once both directions of the hop can authenticate.

Everything remote waits for the Namespace: creating it is the one cheap proof
that Crossplane can reach the cluster, so a bad kubeconfig shows up as one
waiting object rather than every object failing at once.
"""

from dataclasses import dataclass, field
from typing import Any

from fleetgate.core.constants import (
    API_VERSION,
    CLUSTER_CANNOT_CONNECT,
    LABEL_PREFIX,
    SYSTEM_NAMESPACE,
)
from fleetgate.core.errors import InputError
from fleetgate.core.kinds.cluster import InferenceCluster
from fleetgate.core.names import CLUSTER_GATEWAY
from fleetgate.core.observed import configmap_value, explanation
from fleetgate.core.ordering import compose_after
from fleetgate.core.readiness import condition_query
from fleetgate.core.reconcile import Reconcile, Selector
from fleetgate.inference_cluster import builders, dashboard, stack
from fleetgate.inference_cluster.builders import FleetGateway, Site, Trust

GATEWAYS = "gateways"
# Composition names.
PROVIDER_CONFIG = "provider-config"
HELM_PROVIDER_CONFIG = "helm-provider-config"
NAMESPACE = "namespace"
SELFSIGNED_ISSUER, CA_CERTIFICATE, CA_ISSUER, CA_BUNDLE = (
    "selfsigned-issuer",
    "ca-certificate",
    "ca-issuer",
    "ca-bundle",
)
CA_PUBLISHED = "ca-published"
SERVING_CERTIFICATE = "serving-certificate"
CLIENT_CAS = "client-cas"
CLIENT_VALIDATION = "client-validation"
GATEWAY = "gateway"
GATEWAY_CLASS = "gateway-class"
FAILOVER_DASHBOARD = "failover-dashboard"

SCHEDULABLE = "Schedulable"
CONNECTED = "Connected"
GATEWAY_READY = "GatewayReady"
STACK_READY = "StackReady"


@dataclass
class Progress:
    """What this pass composed (and whether it is ready) and what still waits, and for what."""

    rec: Reconcile
    composed: dict[str, bool] = field(default_factory=dict)
    waiting: dict[str, list[str]] = field(default_factory=dict)
    addons_waiting: dict[str, list[str]] = field(default_factory=dict)
    """Addons of composed releases (``<release> <addon>``) and what they still wait for."""

    def after(
        self,
        name: str,
        manifest: dict[str, Any],
        *,
        ready: list[str] | tuple[str, ...] = (),
        exist: list[str] | tuple[str, ...] = (),
    ) -> bool:
        missing = compose_after(self.rec, name, manifest, ready=ready, exist=exist)
        if missing:
            self.waiting[name] = missing
            return False
        self.composed[name] = self.rec.observed(name).ready
        return True

    def keep(self, name: str) -> bool:
        if self.rec.keep(name):
            self.composed[name] = self.rec.observed(name).ready
            return True
        return False

    def ready(self, name: str) -> bool:
        return self.composed.get(name, False)


def compose(rec: Reconcile) -> None:
    cluster = rec.composite(InferenceCluster)
    check_placement_labels(cluster)
    site = Site.of(cluster)
    install = cluster.spec.stack.install
    progress = Progress(rec)

    connect(rec, progress, site, install=install)
    progress.after(NAMESPACE, builders.namespace(site))
    if install:
        install_stack(progress, site, cluster.spec.stack.rate_limit_redis)
    issue_pki(progress, site, install=install)
    trust = trust_fleet_gateways(rec, progress, site, install=install)
    served = serve_gateway(rec, progress, site, trust, install=install)
    report(rec, progress, cluster, site, trust, served=served)


def check_placement_labels(cluster: InferenceCluster) -> None:
    """Keys under fleetgate.dev/ are Fleetgate's own; the XRD forbids them, older XRs may not."""
    for key in sorted(cluster.spec.placement.metadata.labels):
        if key.startswith(LABEL_PREFIX):
            raise InputError(
                f"spec.placement.metadata.labels: key {key!r} is reserved "
                f"(keys under {LABEL_PREFIX} are managed by Fleetgate)"
            )


def connect(rec: Reconcile, progress: Progress, site: Site, *, install: bool) -> None:
    """Compose the ClusterProviderConfigs (unless given one) and publish which one to use."""
    configs = builders.provider_configs(site)
    wanted = {PROVIDER_CONFIG: "kubernetes", HELM_PROVIDER_CONFIG: "helm"}
    if not install:
        del wanted[HELM_PROVIDER_CONFIG]
    for name, provider in wanted.items():
        if provider in configs:
            # A provider config reports no readiness: that it exists is all there is.
            exists = rec.observed(name).exists
            rec.compose(name, configs[provider], ready=exists)
            progress.composed[name] = exists
    rec.set_status(providerConfigRef={"name": site.provider_config})


def install_stack(progress: Progress, site: Site, redis: str | None) -> None:
    """Helm releases, the Inference Extension CRDs, the GatewayClass, the rate-limit Redis
    (unless ``redis`` names one to use) and the failover dashboard, each after its deps."""
    crds = stack.gaie_crd_manifests()
    for key, crd in crds.items():
        manifest = site.remote(crd, readiness_query=stack.CRD_READY, keep_on_delete=True)
        progress.after(key, manifest, ready=[NAMESPACE])
    for chart in stack.CHARTS:
        key = stack.release_key(chart.key)
        deps = [NAMESPACE, *chart.after_resources]
        for component in chart.after:
            deps += list(crds) if component == stack.GAIE_CRDS else [stack.release_key(component)]
        addons = []
        for addon in chart.addons:
            after = [stack.release_key(c) for c in addon.after]
            # Sticky: once applied, an addon stays whatever its prerequisites do.
            if stack.carries(progress.rec.observed(key), addon) or all(
                progress.rec.observed(dep).ready for dep in after
            ):
                addons.append(addon)
            else:
                progress.addons_waiting[f"{key} {addon.name}"] = after
        release = stack.release(
            chart,
            provider_config=site.helm_provider_config,
            addons=tuple(addons),
            redis=redis,
        )
        progress.after(key, release, ready=deps)
    for manifest in stack.rate_limit_redis() if redis is None else []:
        # In Envoy Gateway's namespace, which its release creates.
        key = stack.redis_key(manifest["kind"])
        progress.after(key, site.remote(manifest), ready=[stack.release_key("envoy-gateway")])
    gateway_class = site.remote(
        stack.gateway_class(site.gateway_class),
        readiness_query=condition_query("Accepted"),
        # The cluster gateway runs on it whether or not Fleetgate installs the stack.
        keep_on_delete=True,
    )
    progress.after(GATEWAY_CLASS, gateway_class, ready=[stack.release_key("envoy-gateway")])
    progress.after(FAILOVER_DASHBOARD, site.remote(dashboard.config_map()), ready=[NAMESPACE])


def stack_keys(*, own_redis: bool) -> list[str]:
    return [
        *stack.crd_keys(),
        *(stack.release_key(c.key) for c in stack.CHARTS),
        *(stack.redis_key(m["kind"]) for m in stack.rate_limit_redis() if own_redis),
        GATEWAY_CLASS,
        FAILOVER_DASHBOARD,
    ]


def issue_pki(progress: Progress, site: Site, *, install: bool) -> None:
    """The cluster CA chain, the gateway's serving certificate, and the CA published back."""
    ca = site.ca
    chain = ca.manifests()
    cert_manager = [stack.release_key("cert-manager")] if install else []
    trust_manager = [stack.release_key("trust-manager")] if install else []
    progress.after(
        SELFSIGNED_ISSUER, site.remote(chain["selfsigned-issuer"]), ready=[NAMESPACE, *cert_manager]
    )
    progress.after(CA_CERTIFICATE, site.remote(chain["ca-certificate"]), ready=[SELFSIGNED_ISSUER])
    progress.after(CA_ISSUER, site.remote(chain["ca-issuer"]), ready=[CA_CERTIFICATE])
    progress.after(
        SERVING_CERTIFICATE, site.remote(builders.serving_certificate(site)), ready=[CA_ISSUER]
    )
    # Ready once trust-manager synced it (core.readiness, by kind).
    progress.after(
        CA_BUNDLE, site.remote(chain["ca-bundle"]), ready=[CA_CERTIFICATE, *trust_manager]
    )
    # Observed, never managed: trust-manager owns the ConfigMap. A CA *Secret*
    # is never observed: provider-kubernetes would copy its key into status.
    progress.after(CA_PUBLISHED, site.remote(ca.published(), observe_only=True), ready=[CA_BUNDLE])


def trust_fleet_gateways(
    rec: Reconcile, progress: Progress, site: Site, *, install: bool
) -> Trust | None:
    """The client CAs of every fleet gateway, and the policy validating clients against them.

    None while Crossplane has not listed the InferenceGateways yet: then what
    was composed before stays as it was.
    """
    gateways = rec.require_all(GATEWAYS, Selector(API_VERSION, "InferenceGateway"), FleetGateway)
    if gateways is None:
        progress.keep(CLIENT_CAS)
        progress.keep(CLIENT_VALIDATION)
        return None
    trust = builders.trust(gateways)
    if trust.unpublished:
        rec.warning(
            "not trusted yet (no client CA published): InferenceGateway "
            + ", ".join(trust.unpublished),
            "FleetGatewayCAPending",
        )
    if trust.malformed:
        rec.warning(
            "not trusted: the client CA published by InferenceGateway "
            + ", ".join(trust.malformed)
            + " is not a PEM certificate",
            "FleetGatewayCAMalformed",
        )
    if trust.trusted:
        progress.after(CLIENT_CAS, builders.client_cas(site, trust.bundle), ready=[NAMESPACE])
        envoy_gateway = [stack.release_key("envoy-gateway")] if install else []
        progress.after(
            CLIENT_VALIDATION,
            builders.client_validation(site),
            ready=[NAMESPACE, *envoy_gateway],
            exist=[CLIENT_CAS],
        )
    elif progress.rec.observed(GATEWAY).exists:
        # The last fleet gateway is gone: the Gateway is withdrawn this pass,
        # and clients stay validated until it has gone too.
        progress.keep(CLIENT_CAS)
        progress.keep(CLIENT_VALIDATION)
    return trust


def serve_gateway(
    rec: Reconcile, progress: Progress, site: Site, trust: Trust | None, *, install: bool
) -> bool:
    """The cluster gateway, only once a fleet CA is trusted and client validation exists."""
    if trust is None:
        return progress.keep(GATEWAY)
    if not trust.trusted:
        rec.warning(
            f"cluster gateway {CLUSTER_GATEWAY} withheld: no InferenceGateway has published a "
            "client CA yet, and an HTTPS listener without client-certificate validation "
            "would accept any caller",
            "NoTrustedFleetGateway",
        )
        return False
    gateway_class = [GATEWAY_CLASS] if install else []
    return progress.after(
        GATEWAY,
        builders.gateway(site),
        ready=[SERVING_CERTIFICATE, *gateway_class],
        # The policy must be on the cluster before the listener is: Envoy
        # Gateway would otherwise program it once without client validation.
        exist=[CLIENT_CAS, CLIENT_VALIDATION],
    )


# --- status and conditions -----------------------------------------------------------


def report(
    rec: Reconcile,
    progress: Progress,
    cluster: InferenceCluster,
    site: Site,
    trust: Trust | None,
    *,
    served: bool,
) -> None:
    address = builders.gateway_address(rec.observed(GATEWAY)) if served else None
    ca = configmap_value(rec.observed(CA_PUBLISHED), builders.CA_BUNDLE_KEY)
    if ca is not None and not builders.looks_like_certificate(ca):
        rec.warning(
            "the cluster CA ConfigMap does not hold a PEM certificate", "ClusterCAMalformed"
        )
        ca = None
    trusted = len(trust.trusted) if trust is not None else 0
    mutual = bool(address and ca and trusted)

    gateway: dict[str, str] = {}
    if address:
        gateway["address"] = address
    if ca:
        gateway["caCertificate"] = ca
    if mutual:
        gateway["hostname"] = site.hostname
    if gateway:
        rec.set_status(gateway=gateway)

    report_connected(rec, progress, site)
    if cluster.spec.stack.install:
        report_stack(rec, progress, own_redis=cluster.spec.stack.rate_limit_redis is None)
    report_gateway(rec, progress, trust, served=served)
    report_schedulable(rec, cluster, site, trust, address=address, ca=ca, trusted=trusted)
    if progress.waiting:
        rec.warning(
            "not composed yet, waiting for prerequisites: " + _describe_waiting(progress),
            "WaitingForPrerequisites",
        )
    everything_ready = (
        all(progress.composed.values()) and not progress.waiting and not progress.addons_waiting
    )
    rec.allow_ready(everything_ready and mutual)
    # The InferenceGateways' client CAs are required resources: a new or
    # rotated one is seen only when the TTL runs out (see core.pacing).
    rec.set_waiting(not (everything_ready and mutual))


def _describe_waiting(progress: Progress) -> str:
    return "; ".join(
        f"{name} (after {', '.join(deps)})" for name, deps in sorted(progress.waiting.items())
    )


def report_connected(rec: Reconcile, progress: Progress, site: Site) -> None:
    via = f"ClusterProviderConfig {site.provider_config}"
    if progress.ready(NAMESPACE):
        rec.condition(
            CONNECTED, "True", "ClusterReachable", f"Namespace {SYSTEM_NAMESPACE} exists ({via})"
        )
        return
    hint = ""
    if site.credentials_secret is not None:
        name, key = site.credentials_secret
        hint = f"; check key {key!r} of Secret {SYSTEM_NAMESPACE}/{name}"
    # provider-kubernetes' own word on its first object there: a ProviderConfig that
    # does not exist, credentials refused, an API server that does not answer. Said,
    # it is not a cluster still joining: placement stops waiting for it
    # (model_deployment/fleet.is_joining).
    synced = rec.observed(NAMESPACE).failing("Synced")
    if synced is not None:
        rec.condition(
            CONNECTED,
            "False",
            CLUSTER_CANNOT_CONNECT,
            f"provider-kubernetes cannot create Namespace {SYSTEM_NAMESPACE} via {via}: "
            f"{explanation(synced)}{hint}",
        )
        return
    message = f"waiting for provider-kubernetes to create Namespace {SYSTEM_NAMESPACE} via {via}"
    if hint:
        message += f"; if this persists{hint}"
    rec.condition(CONNECTED, "False", "WaitingForCluster", message)


def report_stack(rec: Reconcile, progress: Progress, *, own_redis: bool) -> None:
    pending = []
    for key in stack_keys(own_redis=own_redis):
        if key in progress.waiting:
            pending.append(f"{key} (after {', '.join(progress.waiting[key])})")
        elif not progress.ready(key):
            pending.append(f"{key} (installing)")
    for addon, deps in sorted(progress.addons_waiting.items()):
        pending.append(f"{addon} (after {', '.join(deps)})")
    if pending:
        rec.condition(STACK_READY, "False", "Installing", "waiting for: " + "; ".join(pending))
    else:
        versions = ", ".join(f"{c.key} {c.version}" for c in stack.CHARTS)
        rec.condition(STACK_READY, "True", "StackInstalled", f"installed: {versions}")


def report_gateway(
    rec: Reconcile, progress: Progress, trust: Trust | None, *, served: bool
) -> None:
    gw = f"Gateway {SYSTEM_NAMESPACE}/{CLUSTER_GATEWAY}"
    if trust is None and not served:
        rec.condition(
            GATEWAY_READY, "False", "WaitingForFleetGateways", "waiting for the InferenceGateways"
        )
    elif trust is not None and not trust.trusted:
        rec.condition(
            GATEWAY_READY,
            "False",
            "NoTrustedFleetGateway",
            f"{gw} withheld until an InferenceGateway publishes a client CA",
        )
    elif not served:
        waiting = ", ".join(progress.waiting.get(GATEWAY, [])) or "client validation"
        rec.condition(
            GATEWAY_READY, "False", "WaitingForPrerequisites", f"{gw} waits for {waiting}"
        )
    elif not progress.ready(CLIENT_VALIDATION):
        rec.condition(
            GATEWAY_READY,
            "False",
            "ClientValidationNotAccepted",
            f"Envoy Gateway has not accepted ClientTrafficPolicy {builders.CLIENT_VALIDATION} "
            "yet; until it does the listener refuses every request",
        )
    elif not progress.ready(GATEWAY):
        rec.condition(GATEWAY_READY, "False", "WaitingForGateway", f"{gw} is not programmed yet")
    else:
        rec.condition(
            GATEWAY_READY, "True", "GatewayProgrammed", f"{gw} is programmed with client validation"
        )


def report_schedulable(
    rec: Reconcile,
    cluster: InferenceCluster,
    site: Site,
    trust: Trust | None,
    *,
    address: str | None,
    ca: str | None,
    trusted: int,
) -> None:
    missing: list[tuple[str, str]] = []
    if trust is None:
        missing.append(("WaitingForFleetGateways", "waiting for the InferenceGateways"))
    elif not trusted:
        missing.append(
            ("NoTrustedFleetGateway", "no InferenceGateway has published a client CA to trust")
        )
    if not ca:
        missing.append(("WaitingForClusterCA", "the cluster CA is not published yet"))
    if not address:
        missing.append(("WaitingForGatewayAddress", "the cluster gateway has no address yet"))
    if not cluster.spec.schedulable:
        also = f" (also: {'; '.join(m for _, m in missing)})" if missing else ""
        rec.condition(
            SCHEDULABLE,
            "False",
            "Draining",
            "spec.schedulable is false: no new placements, existing endpoints withdrawn" + also,
        )
    elif missing:
        rec.condition(SCHEDULABLE, "False", missing[0][0], "; ".join(m for _, m in missing))
    else:
        rec.condition(
            SCHEDULABLE,
            "True",
            "MutuallyAuthenticated",
            f"fleet gateways reach this cluster at {site.hostname} over mutual TLS "
            f"({trusted} fleet gateway CA{'s' if trusted != 1 else ''} trusted)",
        )
