"""``spec.provider.overrides``: three checks, in this order, then a merge.

1. **Deny-list, recursively.** A key that is security-sensitive (it would let
   a model team escape the pod sandbox, take another identity or pick a node)
   or that sizes the workload (replicas and resources belong to
   ``spec.replicas`` and ``spec.resources``, which placement counts) is refused
   wherever it appears, inside lists too. Its subtree is not looked into: one
   problem per offending path.
2. **Allow-list of root keys, per provider.** Each provider accepts only the
   roots it knows how to apply; anything else is refused by name rather than
   merged and silently pruned by the API server.
3. **Strict decoding.** Every accepted root is decoded against the provider's
   own model of it, unknown keys forbidden at every depth, so a typo (``epp.imag``)
   is refused naming its path instead of being dropped. Keys only the provider
   understands (Dynamo's ``routerMode``, ``epp``) are decoded here and never
   written to the upstream object.

A refused override composes nothing new; the composer keeps what runs and
says why. An accepted one is merged into the provider's upstream object:
maps merge key by key, lists and scalars replace.
"""

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from fleetgate.core.constants import LABEL_PREFIX
from fleetgate.core.errors import field_path
from fleetgate.core.models import EngineType

if TYPE_CHECKING:  # the providers build on this module's pieces
    from fleetgate.model_deployment.providers.base import Provider, ServingMode

ROOT = "spec.provider.overrides"
PROBLEMS_SHOWN = 5

SECURITY_KEYS = frozenset(
    {
        "allowPrivilegeEscalation",
        "automountServiceAccountToken",
        "capabilities",
        "hostIPC",
        "hostNetwork",
        "hostPath",
        "hostPID",
        "hostPort",
        "hostUsers",
        "nodeName",
        "priorityClassName",
        "privileged",
        "procMount",
        "runtimeClassName",
        "securityContext",
        "serviceAccount",
        "serviceAccountName",
        "shareProcessNamespace",
    }
)
SIZING_KEYS = frozenset(
    {"maxReplicas", "minReplicas", "multinode", "numOfHosts", "replicas", "resources"}
)


# --- check 1 ------------------------------------------------------------------


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, key) of every map key under ``value``, in a stable order, not below a denied key."""
    if isinstance(value, Mapping):
        for key in sorted(value, key=str):
            here = f"{path}.{key}"
            yield here, str(key)
            if key not in SECURITY_KEYS and key not in SIZING_KEYS:
                yield from _walk(value[key], here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def denied(overrides: Mapping[str, Any], sizing_paths: frozenset[str] = frozenset()) -> list[str]:
    """Check 1: every denied key, wherever it is; ``sizing_paths`` adds provider-specific ones."""
    problems = []
    for path, key in _walk(overrides, ROOT):
        if key in SECURITY_KEYS:
            problems.append(f"{path}: overriding {key} is not allowed (security-sensitive)")
        elif key in SIZING_KEYS or path.removeprefix(f"{ROOT}.") in sizing_paths:
            problems.append(
                f"{path}: overriding {key} is not allowed (sizing comes from spec.replicas "
                "and spec.resources)"
            )
    return problems


# --- check 2 ------------------------------------------------------------------


def roots(model: type[BaseModel]) -> list[str]:
    """The root keys ``model`` accepts, as written in an override."""
    return sorted(f.alias or name for name, f in model.model_fields.items())


def unknown_roots(overrides: Mapping[str, Any], provider: "Provider") -> list[str]:
    """Check 2: roots the provider does not take."""
    accepted = roots(provider.overrides)
    takes = f"it takes {', '.join(accepted)}" if accepted else "it takes no overrides"
    return [
        f"{ROOT}.{key}: not an override provider {provider.name} applies ({takes})"
        for key in sorted(overrides, key=str)
        if key not in accepted
    ]


# --- check 3 ------------------------------------------------------------------


def _problems(err: ValidationError) -> list[str]:
    """One line per decoding error, naming the path; input values are never echoed."""
    problems = []
    for error in err.errors():
        path = field_path(error["loc"], ROOT)
        if error["type"] == "extra_forbidden":
            problems.append(f"{path}: unknown field (misspelt?); nothing is dropped silently")
        else:
            problems.append(f"{path}: {str(error['msg']).removeprefix('Value error, ')}")
    return problems


def decode(
    overrides: Mapping[str, Any], provider: "Provider", engine: EngineType, mode: "ServingMode"
) -> BaseModel | list[str]:
    """Check 3: the provider's strict model of the overrides, or what is wrong with them."""
    try:
        return provider.overrides.model_validate(
            overrides, context={"engine": engine, "mode": mode}
        )
    except ValidationError as err:
        return _problems(err)


def check(
    overrides: Mapping[str, Any] | None,
    provider: "Provider",
    engine: EngineType,
    mode: "ServingMode",
    sizing_paths: frozenset[str] = frozenset(),
) -> BaseModel | list[str] | None:
    """The three checks in order: the decoded overrides, the problems, or None when unset.

    Each check runs only when the one before it passed, so a problem is
    reported by the first rule it breaks.
    """
    if not overrides:
        return None
    for problems in (denied(overrides, sizing_paths), unknown_roots(overrides, provider)):
        if problems:
            return problems
    return decode(overrides, provider, engine, mode)


def summary(problems: list[str]) -> str:
    shown = problems[:PROBLEMS_SHOWN]
    more = len(problems) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


# --- applying -----------------------------------------------------------------


def merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` over ``base``: maps merge key by key, lists and scalars replace."""
    merged = dict(base)
    for key, value in patch.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            merged[key] = merge(current, value)
        else:
            merged[key] = value
    return merged


def upstream(decoded: BaseModel | None, *, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What the user set, as the upstream object spells it, without provider-only keys."""
    if decoded is None:
        return {}
    data = decoded.model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
    return {k: v for k, v in data.items() if k not in exclude}


# --- the pieces of upstream objects more than one provider accepts ---------------


class Strict(BaseModel):
    """An override as its upstream object spells it: camelCase, nothing unknown."""

    # Built on first use, as core.models.Model is: most deployments override nothing.
    model_config = ConfigDict(
        alias_generator=to_camel, extra="forbid", frozen=True, defer_build=True
    )


LabelValue = Annotated[str, Field(max_length=63)]
Text = Annotated[str, Field(max_length=1024)]


def not_ours(labels: dict[str, str] | None) -> dict[str, str] | None:
    """Keys under fleetgate.dev/ select Fleetgate's own pods: a team may not set them."""
    ours = sorted(k for k in labels or {} if k.startswith(LABEL_PREFIX))
    if ours:
        raise ValueError(f"label keys under {LABEL_PREFIX} are Fleetgate's ({', '.join(ours)})")
    return labels


class PodMetadata(Strict):
    labels: Annotated[dict[str, LabelValue], Field(max_length=32)] | None = None
    annotations: Annotated[dict[str, Text], Field(max_length=32)] | None = None

    @field_validator("labels")
    @classmethod
    def _labels_not_ours(cls, labels: dict[str, str] | None) -> dict[str, str] | None:
        return not_ours(labels)


class Toleration(Strict):
    key: Annotated[str, Field(max_length=316)] | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


NodeSelector = Annotated[dict[str, LabelValue], Field(max_length=32)]
Tolerations = Annotated[list[Toleration], Field(max_length=32)]


class EnvVar(Strict):
    """A literal variable only: ``valueFrom`` could read any Secret of the cluster's namespace."""

    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
    ]
    value: Annotated[str, Field(max_length=32768)] = ""


Envs = Annotated[list[EnvVar], Field(max_length=64)]


class Scheduling(Strict):
    """Where pods may run: the part of a pod spec a model team may steer."""

    node_selector: NodeSelector | None = None
    tolerations: Tolerations | None = None


class MatchExpression(Strict):
    key: Annotated[str, Field(min_length=1, max_length=316)]
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Annotated[list[LabelValue], Field(max_length=32)] | None = None


class LabelSelector(Strict):
    match_labels: NodeSelector | None = None
    match_expressions: Annotated[list[MatchExpression], Field(max_length=16)] | None = None
