"""One reconcile of one XR: what the function reads, composes and reports.

``Reconcile`` wraps the request and the response so that composers speak of
the things they do (require, compose, keep, report) instead of protobuf
plumbing, and so that the rules every function must follow live in one place:

* a requirement is declared on every call (Crossplane settles requirements
  once they are stable between calls), and "not resolved yet" is told apart
  from "resolved to nothing";
* a resource composed before is kept while an input is transiently missing;
* messages are bounded, and no value is read from a Secret but presence.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core import pacing, reachability, secrets, structs
from fleetgate.core.errors import InputError, refuse_duplicates
from fleetgate.core.models import C, Model, parse, wire_fields
from fleetgate.core.observed import Observed
from fleetgate.core.secrets import SecretKeys, scrub_secret
from fleetgate.core.verdict import Status, Verdict

MESSAGE_MAX = 1024


_STATUS = {
    "True": fnv1.STATUS_CONDITION_TRUE,
    "False": fnv1.STATUS_CONDITION_FALSE,
    "Unknown": fnv1.STATUS_CONDITION_UNKNOWN,
}


def describe_object(data: dict[str, Any], default_kind: str) -> str:
    """``Kind name`` of an untrusted object, for messages; never fails."""
    kind = data.get("kind")
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    kind_text = kind if isinstance(kind, str) and kind else default_kind
    name_text = name if isinstance(name, str) and name else "?"
    return bounded(f"{kind_text} {name_text}")[:300]


def wrong_kind(where: str, composes: Iterable[str], kind: object) -> InputError:
    """The error for an XR of a kind this function does not compose: a Composition's
    pipeline names the wrong function, which no field of the XR can fix."""
    return InputError(
        f"invalid {where}: kind: this function composes {' and '.join(composes)}, not "
        f"{kind}; check the Composition's pipeline functionRef"
    )


def bounded(message: str) -> str:
    """Keep messages readable and within what a condition or event accepts."""
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


class Selector(NamedTuple):
    """What to ask Crossplane for: one kind, by name or by labels."""

    api_version: str
    kind: str
    name: str | None = None
    labels: dict[str, str] | None = None
    namespace: str | None = None

    def to_proto(self) -> fnv1.ResourceSelector:
        sel = fnv1.ResourceSelector(api_version=self.api_version, kind=self.kind)
        if self.name is not None:
            sel.match_name = self.name
        else:
            # An empty label set matches every object of the kind, but only if
            # matchLabels is marked present: an unset ``match`` oneof is refused
            # by Crossplane and resolves to nothing in ``crossplane render``.
            sel.match_labels.SetInParent()
            sel.match_labels.labels.update(self.labels or {})
        if self.namespace is not None:
            sel.namespace = self.namespace
        return sel


class ByName(Mapping[str, C]):
    """Required resources of one kind by name; each converted and validated when first read.

    For a function that needs a few of many: a ModelService reads the
    InferenceClusters of the gateways that select it and of its endpoints,
    not every cluster in the fleet Crossplane lists, and pays for those few.
    A malformed resource is an InputError naming it when it is read; one the
    function never reads cannot stop it. A name listed twice is refused at
    once, as ``require_all`` callers do.
    """

    def __init__(self, model: type[C], kind: str, found: list[Any]) -> None:
        names = []
        for raw in found:
            name = structs.lookup(raw, "metadata", "name")
            names.append(name.string_value if name is not None else "")
        refuse_duplicates(f"{kind}s", names)
        self._model, self._kind = model, kind
        self._raw = dict(zip(names, found, strict=True))
        self._parsed: dict[str, C] = {}

    def __getitem__(self, name: str) -> C:
        if name not in self._parsed:
            data = structs.to_dict(self._raw[name], only=wire_fields(self._model))
            self._parsed[name] = parse(self._model, data, describe_object(data, self._kind))
        return self._parsed[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._raw))

    def __len__(self) -> int:
        return len(self._raw)


@dataclass
class Reconcile:
    """The request being answered and the response being built."""

    req: fnv1.RunFunctionRequest
    rsp: fnv1.RunFunctionResponse
    _status: dict[str, Any] = field(default_factory=dict)
    _waiting: bool | None = None
    _observed: dict[str, Observed] = field(default_factory=dict)
    _observed_composite: Observed | None = None

    # --- reading -----------------------------------------------------------

    @property
    def observed_composite(self) -> Observed:
        """The XR as Crossplane observed it (what the function wrote to its status
        before included): a view that converts only what is read, like ``observed``."""
        if self._observed_composite is None:
            self._observed_composite = Observed(self.req.observed.composite.resource)
        return self._observed_composite

    def composite(self, model: type[C]) -> C:
        """The observed XR as a typed model; InputError names a malformed field.

        The model's name is the XR's kind. Another kind is refused as such, not
        validated field by field against the wrong schema: it means a
        Composition's pipeline calls this function for an XR it does not compose.
        """
        data = structs.to_dict(self.req.observed.composite.resource, only=wire_fields(model))
        where = describe_object(data, model.__name__)
        kind = data.get("kind", model.__name__)
        if kind != model.__name__:
            raise wrong_kind(where, [model.__name__], kind)
        return parse(model, data, where)

    def require(self, key: str, selector: Selector) -> list[dict[str, Any]] | None:
        """Declare a requirement; return the resources, or None while unresolved."""
        found = self._declare(key, selector)
        return None if found is None else [structs.to_dict(s) for s in found]

    def _declare(self, key: str, selector: Selector) -> list[Any] | None:
        """Declare a requirement; the resources' Structs, or None while unresolved."""
        self.rsp.requirements.resources[key].CopyFrom(selector.to_proto())
        if key not in self.req.required_resources:
            return None
        return [item.resource for item in self.req.required_resources[key].items]

    def require_observed(self, key: str, selector: Selector) -> list[Observed] | None:
        """Like ``require``, each resource as a view converting only what is read."""
        found = self._declare(key, selector)
        return None if found is None else [Observed(s) for s in found]

    def require_all(self, key: str, selector: Selector, model: type[C]) -> list[C] | None:
        """Like ``require``, each resource validated as ``model``.

        A malformed required resource is an InputError naming it and the field.
        """
        found = self._declare(key, selector)
        if found is None:
            return None
        parsed, problems = [], []
        for item in (structs.to_dict(s, only=wire_fields(model)) for s in found):
            try:
                parsed.append(parse(model, item, describe_object(item, selector.kind)))
            except InputError as err:
                problems.append(str(err))
        if problems:
            # The same answer whatever order Crossplane lists the objects in.
            raise InputError(min(problems))
        return parsed

    def require_secrets(self, key: str, selector: Selector) -> list[SecretKeys] | None:
        """Like ``require`` for Secrets: each one's name and key names, never a value.

        Crossplane sends each Secret whole, values included; only names and key
        names are read here, so no value can reach what a function composes.

        A Secret being deleted counts as gone. provider-kubernetes puts a
        finalizer on each object an Object references when it first adds its
        own finalizer to that Object, for the references the Object has then,
        and lifts it when the Object is deleted (v1.2.1 internal/controller/
        namespaced/object/object.go:781-842, 845-870). While that finalizer
        holds a Secret being deleted, it is still readable; read as present,
        it would stay referenced by a live Object and its deletion would never
        finish.
        """
        found = self._declare(key, selector)
        if found is None:
            return None
        return [
            SecretKeys.of(s)
            for s in found
            if not structs.lookup(s, "metadata", "deletionTimestamp")
        ]

    def require_by_name(self, key: str, selector: Selector, model: type[C]) -> ByName[C] | None:
        """Like ``require_all``, keyed by name and validated only as each is read."""
        found = self._declare(key, selector)
        return None if found is None else ByName(model, selector.kind, found)

    def observed(self, name: str) -> Observed:
        """A composed resource as Crossplane observed it: a view that converts only what
        is read (``observed.Observed``); ``.exists`` is False when it was not observed."""
        view = self._observed.get(name)
        if view is None:
            found = self.req.observed.resources
            view = Observed(found[name].resource if name in found else None)
            self._observed[name] = view
        return view

    def observed_names(self) -> list[str]:
        """The composition names of every resource Crossplane observed, sorted."""
        return sorted(self.req.observed.resources)

    # --- composing ---------------------------------------------------------

    def compose(self, name: str, manifest: dict[str, Any], *, ready: bool | None = None) -> None:
        """Add ``manifest`` to the desired state under the composition name ``name``.

        An Object filling a projected Secret comes with the Object holding it,
        and gets its references only once it carries provider-kubernetes'
        finalizer, so the provider never saves a value into either
        (``core/secrets.py``).
        """
        if secrets.is_filler(manifest):
            held = secrets.holder_name(name)
            self._put(held, secrets.holder(manifest), ready=self.observed(held).ready)
            secrets.withhold_until_finalized(
                manifest, lambda: self.observed(name).has_finalizer(secrets.PROVIDER_FINALIZER)
            )
        self._put(name, manifest, ready=ready)

    def _put(self, name: str, manifest: dict[str, Any], *, ready: bool | None) -> None:
        desired = self.rsp.desired.resources[name]
        desired.resource.Clear()
        structs.update(desired.resource, manifest)
        if ready is not None:
            desired.ready = fnv1.READY_TRUE if ready else fnv1.READY_FALSE

    def deleted_after(self, manifest: dict[str, Any], *first: str) -> dict[str, Any]:
        """``manifest``, owned too by each composed resource of ``first`` Crossplane observed.

        Kubernetes' garbage collector deletes an object only once none of its owners is
        left. When an XR is deleted, Crossplane only removes its finalizer and leaves
        everything it composed to the collector, all at once (internal/controller/
        apiextensions/composite/reconciler.go:629-655 at v2.4.0), and no function runs to
        stage the deletion: with these owners this one goes only after each of ``first``
        is gone. Crossplane keeps the owners a function sets beside its own controller
        reference (composition_render.go:114-116).
        """
        owners = []
        for name in first:
            observed = self.observed(name)
            uid, named = observed.get("metadata", "uid"), observed.get("metadata", "name")
            if uid and named:
                kind = {"apiVersion": observed.get("apiVersion"), "kind": observed.get("kind")}
                owners.append({**kind, "name": named, "uid": uid})
        if not owners:
            return manifest
        meta = dict(manifest.get("metadata") or {})
        meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), *owners]
        return {**manifest, "metadata": meta}

    def composes(self, name: str) -> bool:
        """Whether ``name`` is in the desired state so far."""
        return name in self.rsp.desired.resources

    def keep(self, name: str) -> bool:
        """Carry an observed resource over unchanged, so a transient gap deletes nothing.

        Returns False when there was nothing to keep. Secret values that
        provider-kubernetes wrote back into an observed Object are scrubbed:
        the Object is carried over as the function composed it.
        """
        observed = self.observed(name)
        if not observed.exists:
            return False
        manifest = observed.to_dict()
        # Only what the function wrote belongs in desired state; status and
        # server-set metadata would be rejected or fight the API server.
        manifest.pop("status", None)
        meta = manifest.get("metadata")
        if isinstance(meta, dict):
            for server_field in (
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields",
            ):
                meta.pop(server_field, None)
            # Crossplane's controller reference is its own to set; the others are the
            # function's (``deleted_after``).
            owners = [r for r in meta.pop("ownerReferences", None) or [] if not r.get("controller")]
            if owners:
                meta["ownerReferences"] = owners
        spec = manifest.get("spec")
        if isinstance(spec, dict):
            # A composed XR's spec.crossplane is Crossplane's record of what
            # *it* composed; handed back as desired state, the parent would
            # fight Crossplane over it.
            spec.pop("crossplane", None)
        scrub_secret(manifest)
        # As ready as it was observed: Crossplane counts an unmarked resource
        # as not ready, and the XR's readiness is derived from these marks.
        self.compose(name, manifest, ready=observed.ready)
        return True

    def keep_all(self, *prefixes: str) -> list[str]:
        """Keep every observed resource whose name starts with one of ``prefixes`` (all if none).

        For a step whose input is transiently missing. Returns the names kept, sorted.
        """
        kept = sorted(
            name
            for name in self.req.observed.resources
            if not prefixes or name.startswith(prefixes)
        )
        for name in kept:
            self.keep(name)
        return kept

    def set_status(self, **fields: Any) -> None:
        """Set top-level status fields of the XR (merged into desired state at the end)."""
        self._status.update(fields)

    def set_waiting(self, waiting: bool) -> None:
        """Say whether this XR waits for something, which paces the next call (``pacing``).

        Without it, the XR is waiting while any condition reported is False.
        Either way it is waiting while a composed resource is not marked ready.
        ``True`` also covers an XR that serves but will do more once another
        XR publishes something (a required resource, seen only on a call).
        """
        self._waiting = waiting

    def allow_ready(self, allowed: bool) -> None:
        """Hold the XR not ready unless ``allowed``; never declare it ready.

        A function's READY_TRUE for the XR supersedes the readiness Crossplane
        derives from the composed resources (v2.2.0 internal/controller/
        apiextensions/composite/reconciler.go:839-851): said while a composed
        resource was not ready, it made an XR Ready that Crossplane would not
        have. So the XR is only ever held back (READY_FALSE), or left to
        Crossplane (READY_UNSPECIFIED), which marks it Ready once every
        composed resource the function marked ready is (a resource left
        unspecified counts as not ready, composition_functions.go:527-531;
        an XR composing nothing is Ready). ``allowed`` after a hold lifts it.
        """
        self.rsp.desired.composite.ready = fnv1.READY_UNSPECIFIED if allowed else fnv1.READY_FALSE

    # --- reporting ---------------------------------------------------------

    def condition(self, type_: str, status: Status, reason: str, message: str = "") -> None:
        cond = fnv1.Condition(
            type=type_,
            status=_STATUS[status],
            reason=reason,
            target=fnv1.TARGET_COMPOSITE_AND_CLAIM,
        )
        if message:
            cond.message = bounded(message)
        self.rsp.conditions.append(cond)

    def report(self, type_: str, verdict: Verdict) -> None:
        """Condition ``type_`` as ``verdict`` says, and a warning beside it when it asks."""
        self.condition(type_, verdict.status, verdict.reason, verdict.message)
        if verdict.warn:
            self.warning(verdict.message, verdict.reason)

    def warning(self, message: str, reason: str | None = None) -> None:
        self._result(fnv1.SEVERITY_WARNING, message, reason)

    def fatal(self, message: str) -> None:
        self._result(fnv1.SEVERITY_FATAL, message, "InvalidInput")

    def _result(self, severity: "fnv1.Severity", message: str, reason: str | None) -> None:
        result = fnv1.Result(
            severity=severity, message=bounded(message), target=fnv1.TARGET_COMPOSITE_AND_CLAIM
        )
        if reason:
            result.reason = reason
        self.rsp.results.append(result)

    def finish(self) -> None:
        """Write the collected status into the desired XR, and the response's TTL."""
        self._outlast_fillers()
        if self._status:
            structs.update(self.rsp.desired.composite.resource, {"status": self._status})
        conditions = self.observed_composite.get("status", "conditions")
        conditions = (
            [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []
        )
        self._report_reachability(
            had=any(c.get("type") == reachability.CONDITION for c in conditions)
        )
        false_now = [c.type for c in self.rsp.conditions if c.status == _STATUS["False"]]
        # A composed resource not ready yet is a wait too: its readiness reaches
        # the XR only on a later call, and a settled TTL (or an open watch
        # circuit breaker) would hold that call back by up to SETTLED.
        unready = any(r.ready != fnv1.READY_TRUE for r in self.rsp.desired.resources.values())
        said = bool(false_now) if self._waiting is None else self._waiting
        ttl = pacing.ttl(
            waiting=said or unready,
            false_now=false_now,
            observed_conditions=conditions,
            now=datetime.now(UTC),
            created=self.observed_composite.get("metadata", "creationTimestamp"),
        )
        self.rsp.meta.ttl.FromTimedelta(ttl)

    def _outlast_fillers(self) -> None:
        """A projected Secret no longer composed goes filler first, its holder a call later.

        Deleted first, the holder would delete the Secret while the filler,
        still there and watching it, created it again with its values on its
        update path, and was deleted then: the values would stay on the
        cluster with no Object owning them (``core/secrets.py``). So a holder
        is kept as long as its filler is observed and no longer composed;
        Crossplane calls again once the filler is gone (it watches what an XR
        composed), and the holder goes with the Secret.
        """
        desired = self.rsp.desired.resources
        for name in sorted(self.req.observed.resources):
            if name in desired or not name.endswith(secrets.HOLDER_SUFFIX):
                continue
            filler = name.removesuffix(secrets.HOLDER_SUFFIX)
            if filler not in desired and self.observed(filler).exists:
                self.keep(name)

    def _report_reachability(self, had: bool) -> None:
        """``ClusterReachable`` from what provider-kubernetes says of the composed Objects
        (``core/reachability.py``): every function's XRs, in the one place they all pass;
        ``had``: the XR carries the condition from an earlier call, whatever its status."""
        found = reachability.verdict(
            ((name, self.observed(name)) for name in self.req.observed.resources), had
        )
        if found is not None:
            self.report(reachability.CONDITION, found)


def dump(model: Model) -> dict[str, Any]:
    """A model as the camelCase dict the API server stores."""
    return model.model_dump(by_alias=True, exclude_none=True)
