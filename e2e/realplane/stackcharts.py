"""What Helm makes of the stack's values for the one chart whose controller does not run here.

provider-helm cannot be built here, so the Releases compose-inference-cluster
writes are never installed. Envoy Gateway's and trust-manager's charts are
rendered with the stack's values and their controllers run from the result
(envoygateway.py, workloads.py). cert-manager's controller cannot run, but
its chart (in the module the pinned CRDs come from, schemas/crds/go.mod) can be
rendered: Helm checks the stack's values against the chart's
values.schema.json, and the controller must be started with
``--enable-certificate-owner-ref=true`` (templates/deployment.yaml:143-145,
v1.21.2), the flag the stand-in plays and on which a deleted registration's
keys going with it rests.

trust-manager's admission webhook is not registered here (workloads.py), so
how its chart gets the webhook's CA in is checked on what Helm renders. From
v0.25.0 the ValidatingWebhookConfiguration asks cert-manager's cainjector for
the CA of the webhook's TLS Secret (``cert-manager.io/inject-ca-from-secret``,
templates/webhook.yaml:97-101), no longer of its Certificate, and the
Certificate's secretTemplate always carries ``cert-manager.io/allow-direct-
injection: "true"`` (templates/_helpers.tpl:163-177, certificate.yaml:34-36),
without which cainjector v1.21.2 refuses to inject from that Secret
(pkg/controller/cainjector/sources.go:206). Values that replaced the
secretTemplate's annotations, named another Secret or left cert-manager
without its cainjector would leave every Bundle write refused by a webhook
whose CA is empty.
"""

import subprocess
from pathlib import Path

from fleetgate.inference_cluster import stack
from plane import charts
from plane.kube import Obj

REPO = Path(__file__).resolve().parents[2]
CERT_MANAGER = next(c for c in stack.CHARTS if c.key == "cert-manager")
CONTROLLER = "cert-manager-controller"  # the controller's container in the chart
OWNER_REFS = "--enable-certificate-owner-ref=true"
INJECT_FROM_SECRET = "cert-manager.io/inject-ca-from-secret"
ALLOW_DIRECT_INJECTION = "cert-manager.io/allow-direct-injection"
CAINJECTOR = "cert-manager-cainjector"  # cainjector's container in cert-manager's chart


def cert_manager() -> str | None:
    """None when the stack's values give cert-manager's controller owner references and
    run its cainjector; otherwise what is wrong."""
    module = charts.module_dir("github.com/cert-manager/cert-manager", REPO / "schemas" / "crds")
    try:
        objects = charts.render(
            module / "deploy" / "charts" / "cert-manager",
            CERT_MANAGER.release,
            CERT_MANAGER.namespace,
            charts.stack_values(CERT_MANAGER),
        )
    except subprocess.CalledProcessError as err:
        return f"Helm refused the stack's cert-manager values: {err.stderr.strip()}"
    if not _containers(objects, CAINJECTOR):
        return "the stack's cert-manager values run no cainjector: no webhook gets its CA"
    (deployment,) = (
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Deployment"
        and any(c["name"] == CONTROLLER for c in o["spec"]["template"]["spec"]["containers"])
    )
    args, _ = charts.container(objects, "Deployment", deployment, CONTROLLER)
    if OWNER_REFS not in args:
        return f"cert-manager's controller runs without {OWNER_REFS}: {args}"
    return None


def _containers(objects: list[Obj], name: str) -> list[Obj]:
    return [
        c
        for o in objects
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
        if c["name"] == name
    ]


def trust_manager_webhook_ca(objects: list[Obj]) -> str | None:
    """None when trust-manager's rendered webhook configuration takes its CA from a Secret
    that its Certificate writes and allows direct injection from; otherwise what is wrong."""
    (webhook,) = (o for o in objects if o["kind"] == "ValidatingWebhookConfiguration")
    source = (webhook["metadata"].get("annotations") or {}).get(INJECT_FROM_SECRET)
    if source is None:
        return f"trust-manager's webhook configuration has no {INJECT_FROM_SECRET} annotation"
    namespace, _, secret = source.partition("/")
    for cert in (o for o in objects if o["kind"] == "Certificate"):
        if (cert["metadata"].get("namespace"), cert["spec"]["secretName"]) != (namespace, secret):
            continue
        annotations = (cert["spec"].get("secretTemplate") or {}).get("annotations") or {}
        if annotations.get(ALLOW_DIRECT_INJECTION) != "true":
            return f"the Secret {source} is not marked {ALLOW_DIRECT_INJECTION}: cainjector refuses"
        return None
    return f"trust-manager's webhook takes its CA from {source}, which no Certificate writes"
