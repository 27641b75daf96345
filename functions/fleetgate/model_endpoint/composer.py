"""A ModelEndpoint composes nothing: it reports whether a gateway may route to it.

Whether the backend answers is settled by live requests (outlier detection
on the gateway), so the only thing to judge here is its credential: an
endpoint that needs an API key is usable only once the key is there.

Composing nothing, a ModelEndpoint is Ready as Crossplane derives it (no
composed resource is unready: crossplane v2.2.0 internal/controller/
apiextensions/composite/reconciler.go:839-842) unless the function holds it
back, which it does exactly while EndpointReady is False. So it never says
READY_TRUE either (``Reconcile.allow_ready``), and Ready follows EndpointReady.
"""

from fleetgate.core.kinds.endpoint import ModelEndpoint
from fleetgate.core.reconcile import Reconcile, Selector

CONDITION = "EndpointReady"
CREDENTIAL = "credential"


def compose(rec: Reconcile) -> None:
    endpoint = rec.composite(ModelEndpoint)
    ref = endpoint.spec.credential_ref
    if ref is None:
        _ready(rec, "NoCredentialNeeded", "the endpoint needs no credential")
        return

    namespace = endpoint.metadata.namespace
    where = f"Secret {namespace}/{ref.name}"
    secrets = rec.require_secrets(
        CREDENTIAL, Selector("v1", "Secret", name=ref.name, namespace=namespace)
    )
    if secrets is None:
        _not_ready(rec, "WaitingForCredential", f"waiting for Crossplane to look up {where}")
    elif not secrets:
        _not_ready(rec, "CredentialMissing", f"{where} does not exist")
    elif ref.key not in secrets[0].keys:
        # Only the key's presence is read; its value never leaves the Secret.
        _not_ready(rec, "CredentialMissing", f"{where} has no key {ref.key!r}")
    else:
        _ready(rec, "CredentialPresent", f"credential found in {where}, key {ref.key!r}")


def _ready(rec: Reconcile, reason: str, message: str) -> None:
    rec.condition(CONDITION, "True", reason, message)
    rec.allow_ready(True)


def _not_ready(rec: Reconcile, reason: str, message: str) -> None:
    rec.condition(CONDITION, "False", reason, message)
    rec.warning(f"endpoint not usable: {message}", reason)
    rec.allow_ready(False)
