"""Reading composed resources back, as Crossplane observed them.

Observed state is written by controllers the function does not control
(provider-kubernetes copies whatever the workload cluster's controllers put in
a remote object's status), so every reader here is total: a field of the
wrong type reads as absent, never as an exception that would fail the XR.

A function reads a few fields of each resource it composes, on every call:
at the API's maxima, converting each observed Object (its remote manifest
included, and the desired copy of it in its spec) to a dict only to read one
condition was most of the call (bench/README.md). So ``Observed`` reads the
resource's protobuf Struct in place and converts only what is asked for.
"""

from collections.abc import Iterator, Mapping
from typing import Any, Final

from google.protobuf import struct_pb2  # type: ignore[import-untyped]

from fleetgate.core import structs
from fleetgate.core.verdict import Verdict


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]…``, or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _whole(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_current(condition: Mapping[str, Any], generation: Any) -> bool:
    """Whether ``condition`` speaks of the spec at ``generation`` (the object's
    ``metadata.generation``), not of an older one.

    A condition stamped with ``observedGeneration`` is current only when the
    stamp is the object's generation: a controller that has not caught up
    with a new spec still shows what it said of the old one, and an
    AIGatewayRoute at generation 5 whose only Accepted said 1 read as
    accepted while six of its backends were unavailable. A condition
    without a stamp is its writer's latest word: Envoy AI Gateway v1.1.0
    never stamps (internal/controller/controller.go:551-566), nor does
    provider-kubernetes its Objects' Ready (v1.2.1 internal/controller/
    namespaced/object/object.go:534-565, crossplane-runtime's SetConditions),
    nor Crossplane a function's conditions (v2.2.0 internal/controller/
    apiextensions/composite/composition_functions.go:403-425). The writers
    that stamp always do; the readiness queries (``core.readiness``) hold
    those to it, and only this project's emulations leave their stamps out.
    An object without a generation did not come from an API server (those
    emulations, tests): there is nothing to judge against.
    """
    stamp = condition.get("observedGeneration")
    if stamp is None or not _whole(generation):
        return True
    return _whole(stamp) and stamp == generation


class Observed:
    """One resource as Crossplane observed it (or its absence), read lazily from its Struct.

    Nothing is converted until it is read, and then only what is read: a
    condition, a field, the remote object's status. Conditions count only
    while they are current (``is_current``) against this object's generation.
    """

    __slots__ = ("_remote", "_struct")

    def __init__(self, struct: struct_pb2.Struct | None) -> None:
        self._struct = struct
        self._remote: Observed | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> "Observed":
        """A view of plain data (an emulation's, a test's), read as a request's would be."""
        if data is None:
            return cls(None)
        struct = struct_pb2.Struct()
        structs.update(struct, data)
        return cls(struct)

    @property
    def exists(self) -> bool:
        """Whether Crossplane observed the resource at all."""
        return self._struct is not None

    def get(self, *path: str) -> Any:
        """The value at ``path`` as plain data (only it converted); None where missing or
        where a step is not an object."""
        value = None if self._struct is None else structs.lookup(self._struct, *path)
        return None if value is None else structs.plain(value)

    def to_dict(self, only: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The whole resource, or the keys ``only`` names (``structs.to_dict``); {} if absent."""
        return {} if self._struct is None else structs.to_dict(self._struct, only)

    @property
    def generation(self) -> Any:
        """``metadata.generation``, or None."""
        return self.get("metadata", "generation")

    def has_finalizer(self, finalizer: str) -> bool:
        """Whether ``metadata.finalizers`` lists ``finalizer``."""
        held = self.get("metadata", "finalizers")
        return isinstance(held, list) and finalizer in held

    @property
    def ready(self) -> bool:
        """Whether the resource is Ready as Crossplane judges it, for its current spec."""
        return self.has_condition("Ready")

    def has_condition(self, type_: str, status: str = "True") -> bool:
        """Whether the resource carries a current condition ``type_`` with ``status``."""
        return any(
            "status" in found.fields
            and found.fields["status"].WhichOneof("kind") == "string_value"
            and found.fields["status"].string_value == status
            for found in self._current(self._struct, type_)
        )

    def condition(self, type_: str) -> dict[str, Any] | None:
        """The first current condition ``type_``, as plain data; None if there is none."""
        return next((structs.to_dict(c) for c in self._current(self._struct, type_)), None)

    def failing(self, type_: str) -> dict[str, Any] | None:
        """The first current condition ``type_`` if it is False (a controller's refusal or
        provider-kubernetes' failed sync, its message saying why); None otherwise."""
        found = self.condition(type_)
        return found if found is not None and found.get("status") == "False" else None

    def entry_conditions(self, list_field: str, type_: str) -> list[dict[str, Any]]:
        """Current conditions of ``type_`` reported per entry of ``status.<list_field>``.

        Gateway API policies report per ancestor (``ancestors``), routes per parent
        (``parents``); each entry carries its own conditions, stamped with the
        generation of this object they speak of (Envoy Gateway v1.8.3
        internal/gatewayapi/status/route.go:21-33, policy.go:132-169).
        """
        entries = (
            None if self._struct is None else structs.lookup(self._struct, "status", list_field)
        )
        if entries is None:
            return []
        # A Value of another kind reads as an empty list, an entry of another kind as empty.
        return [
            structs.to_dict(c)
            for entry in entries.list_value.values
            for c in self._current(entry.struct_value, type_, path=("conditions",))
        ]

    @property
    def remote(self) -> "Observed":
        """The remote object as provider-kubernetes last saw it (``status.atProvider.manifest``),
        as a view of its own: absent until provider-kubernetes has seen it."""
        if self._remote is None:
            value = (
                None
                if self._struct is None
                else structs.lookup(self._struct, "status", "atProvider", "manifest")
            )
            if value is not None and value.WhichOneof("kind") == "struct_value":
                self._remote = Observed(value.struct_value)
            else:
                self._remote = Observed(None)
        return self._remote

    @property
    def exists_remotely(self) -> bool:
        """Whether provider-kubernetes has seen the remote object (``remote.exists``)."""
        return self.remote.exists

    def _current(
        self,
        holder: struct_pb2.Struct | None,
        type_: str,
        path: tuple[str, ...] = ("status", "conditions"),
    ) -> Iterator[struct_pb2.Struct]:
        """Each condition of ``type_`` in ``holder``'s ``path`` that is current against this
        object's generation; what is not a list of objects holds none."""
        conditions = None if holder is None else structs.lookup(holder, *path)
        if conditions is None:
            return
        # A Value of another kind reads as an empty list, an item of another kind as empty.
        for item in conditions.list_value.values:
            fields = item.struct_value.fields
            if (
                "type" in fields
                and fields["type"].WhichOneof("kind") == "string_value"
                and fields["type"].string_value == type_
                and self._stamped_current(item.struct_value)
            ):
                yield item.struct_value

    def _stamped_current(self, condition: struct_pb2.Struct) -> bool:
        """``is_current`` of ``condition`` against this object's generation."""
        stamp = condition.fields.get("observedGeneration")
        if stamp is None:
            return True  # the common case, read without converting anything
        generation = structs.lookup(self._struct, "metadata", "generation")
        return is_current({"observedGeneration": _scalar(stamp)}, _scalar(generation))


def explanation(condition: Mapping[str, Any]) -> str:
    """What a condition says of itself: its message, else its reason (either may be empty)."""
    return str(condition.get("message") or condition.get("reason") or "")


def _scalar(value: struct_pb2.Value | None) -> Any:
    """A number as the float it holds, null or nothing as None, anything else as itself
    (which no reader takes for a number)."""
    if value is None:
        return None
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        return value.number_value
    return None if kind in (None, "null_value") else value


ABSENT = Observed(None)


def configmap_value(observed: Observed, key: str) -> str | None:
    """A key of an observed ConfigMap, read through its Object; None until published."""
    value = observed.remote.get("data", key)
    return value if isinstance(value, str) and value.strip() else None


PATCH_PENDING: Final = Verdict.no("Pending", "Envoy Gateway has not reported on the patch yet")


def patch_applied(policy: Observed, purpose: str, applied: str) -> Verdict:
    """Whether Envoy Gateway took, and applied, an EnvoyPatchPolicy (``policy`` as observed
    on the cluster); ``purpose`` names what it is for, ``applied`` says what then holds.

    Accepted alone is not enough: a patch whose target is missing from the xDS
    (Envoy Gateway renames a cluster ``.../rule/0/backend/N`` as soon as one of
    the rule's backends is invalid) stays Accepted and reads ``Programmed=False``
    (``ResourceNotFound``), as does a patch the translator could not apply
    (``Invalid``) (Envoy Gateway v1.8.3 internal/xds/translator/jsonpatch.go:99-106,
    157-169; internal/gatewayapi/status/envoypatchpolicy.go:18-51). An Envoy
    Gateway without ``extensionApis.enableEnvoyPatchPolicy`` refuses every patch
    (``Accepted=False``, ``Disabled``). A refusal is also a warning: what the patch
    is for does not hold.
    """
    accepted = policy.entry_conditions("ancestors", "Accepted")
    programmed = policy.entry_conditions("ancestors", "Programmed")
    refused = next((c for c in accepted if c.get("status") != "True"), None)
    unapplied = next((c for c in programmed if c.get("status") != "True"), None)
    for found, verdict in ((refused, "did not accept"), (unapplied, "accepted but did not apply")):
        if found is not None:
            reason = str(found.get("reason") or "NotApplied")
            message = f"Envoy Gateway {verdict} EnvoyPatchPolicy {purpose}: {explanation(found)}"
            return Verdict("False", reason, message, warn=True)
    if accepted and programmed:
        return Verdict("True", "Programmed", applied)
    return PATCH_PENDING
