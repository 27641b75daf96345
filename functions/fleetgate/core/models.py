"""Typed models of the Fleetgate XRs, validated at the function's edge.

The five XRs of api.md, and ModelRoute: the internal XR compose-model-service
composes per serving gateway (one gateway's resolved route). What they share
is here; each kind's own models are in ``fleetgate.core.kinds.<kind>``, a
module a kind, so that a function builds the models of the kinds it reads and
no others (a pydantic model class costs about as much to create as a small
module to import, and a function starts once per pod).

The XRDs already enforce most of this in the API server; the models repeat
the shape so that a function never trusts a dict, and so that an XR written
through an older XRD (or a hand-made request) gets a fatal result naming the
field instead of an exception deep inside a builder.

Field names are the camelCase names of api.md; Python attributes are
snake_case. Unknown fields are ignored (Crossplane adds its own under
``spec.crossplane``), wrong types and missing required fields are not.
"""

import functools
import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from fleetgate.core.constants import CROSSPLANE_FATAL_ERROR
from fleetgate.core.errors import InputError, describe

NAME_MAX = 253
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
# The name of a Kubernetes object a user refers to (a Secret, a ProviderConfig, a
# GatewayClass): a DNS subdomain, as the API server requires of it.
ObjectName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=NAME_MAX,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]
# A key of a Secret's data.
SecretKey = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
# A GPU model as clusters declare it and deployments ask for it, e.g. nvidia-h100.
GPUType = Annotated[str, Field(min_length=1, max_length=63)]
# Gateway API Duration: e.g. 300s, 1m30s, 500ms.
Duration = Annotated[str, Field(max_length=32, pattern=r"^([0-9]{1,5}(h|m|s|ms)){1,4}$")]
# Kubernetes label syntax, as the XRDs check it: an optional DNS-subdomain
# prefix and "/", then a name of 1-63 characters; a value of 0-63 characters.
_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]"
)
LABEL_PREFIX_MAX = 253


def _label_key(key: str) -> str:
    if not _LABEL_KEY.fullmatch(key) or len(key.rpartition("/")[0]) > LABEL_PREFIX_MAX:
        raise ValueError(
            "a label key is an optional DNS subdomain prefix and '/', then a name of 1 to 63 "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return key


LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[
    str, Field(max_length=63, pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
]
# The XRDs' check of the same syntax; ``{path}`` is the field's (schemas.xrds).
LABEL_KEYS: dict[str, Any] = {
    "rule": (
        "self.all(k, k.matches("
        "'^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        "([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$') && (!k.contains('/') || "
        "k.matches('^[^/]{1,253}/')))"
    ),
    "message": (
        "{path} keys must be label keys: an optional DNS subdomain prefix of at most 253 "
        "characters and '/', then a name of 1 to 63 letters, digits, '-', '_' or '.', starting "
        "and ending with a letter or digit"
    ),
}
Labels = Annotated[
    dict[LabelKey, LabelValue],
    Field(max_length=16, json_schema_extra={"x-kubernetes-validations": [LABEL_KEYS]}),
]
# Labels a user puts on the ModelEndpoints composed for them (a cluster's, a
# deployment's template): never under fleetgate.dev/, which Fleetgate's own labels use.
EndpointLabels = Annotated[
    dict[LabelKey, LabelValue],
    Field(
        max_length=16,
        json_schema_extra={
            "x-kubernetes-validations": [
                LABEL_KEYS,
                {
                    "rule": "self.all(k, !k.startsWith('fleetgate.dev/'))",
                    "message": (
                        "{path} must not use keys under fleetgate.dev/ (reserved for labels "
                        "Fleetgate manages)"
                    ),
                },
            ]
        },
    ),
]


class Model(BaseModel):
    """Base: camelCase on the wire, extra fields ignored, values immutable.

    Validators are built on first use (``defer_build``), not at import: each
    function reads a handful of these models, and building all of them was a
    third of every cold start. Defaults that are models therefore use
    ``default_factory``: a model instance as a default would build it at import.
    So do empty dicts and lists: pydantic deep-copies a ``{}`` or ``[]``
    default into every instance that lacks the field, which costs more than
    making a new one (3% of a small ModelService's or ModelDeployment's call).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=True,
        defer_build=True,
    )


class ObjectMeta(Model):
    name: Name
    namespace: str | None = None
    uid: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class LabelSelector(Model):
    """Selects by labels; empty, everything."""

    match_labels: Labels = Field(default_factory=dict)
    """Labels each selected object must carry (at most 16)."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object labelled ``labels`` is selected."""
        return all(labels.get(k) == v for k, v in self.match_labels.items())


class NonEmptySelector(LabelSelector):
    """Selects by at least one label: where selecting everything would be a mistake."""

    match_labels: Annotated[Labels, Field(min_length=1)]
    """Labels each selected object must carry (1 to 16)."""


class Condition(Model):
    type: str
    status: str
    reason: str = ""
    message: str = ""

    @property
    def undetermined(self) -> bool:
        """Marked Unknown by Crossplane because the XR's last reconcile failed (see
        ``CROSSPLANE_FATAL_ERROR``): the peer's state is not known, not changed."""
        return self.status == "Unknown" and self.reason == CROSSPLANE_FATAL_ERROR


# A ModelDeployment publishes ``<namespace>/<name>`` as the model and
# ``/<namespace>/<name>/v1`` as the prefix: up to 317 and 320 characters.
LONG_NAME_MAX = 512


class SecretKeyRef(Model):
    name: ObjectName
    """Name of the Secret."""
    key: SecretKey
    """Key of the Secret holding the API key."""


ServingProvider = Literal["Direct", "LLMD", "KAITO", "Dynamo", "KubeRay"]
EngineType = Literal["vllm", "sglang", "trtllm", "llamacpp"]


class Composite(Model):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta


C = TypeVar("C", bound=Model)


Wire = Mapping[str, "Wire | None"]


@functools.cache
def wire_fields(model: type[BaseModel]) -> Wire | None:
    """The keys ``model`` reads, as spelled on the wire and nested; None for all of them.

    Each key maps to the keys of the model it holds, or to None where the
    field takes any value below it (a dict, a list, a scalar). Converting only
    these from a resource's Struct skips what the model would ignore anyway:
    conditions and server metadata are most of a small object, and models
    read neither. A model that refuses unknown fields gets everything, so
    that it still can.
    """
    if model.model_config.get("extra", "ignore") != "ignore":
        return None
    tree: dict[str, Wire | None] = {}
    for name, info in model.model_fields.items():
        inner = _model_of(info.annotation)
        tree[info.alias or name] = None if inner is None else wire_fields(inner)
    return tree


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``M`` or ``M | None``); None for anything else."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        models = [a for a in get_args(annotation) if a is not type(None)]
        if len(models) == 1:
            return _model_of(models[0])
    return None


def parse(model: type[C], data: Any, where: str) -> C:
    """Validate ``data`` as ``model``; raise InputError naming each bad field.

    ``where`` prefixes field paths, e.g. ``InferenceCluster eu-west`` so a
    message about a required resource says which one is malformed.
    """
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise InputError(f"invalid {where}: {describe(err)}") from None
