"""The API is defined once, in the models, and ``make apis`` writes each XRD's ``spec`` from
them (``schemas.xrds``): the XRDs must be what it writes, and what it writes must be what
pydantic validates.

The second check reads the model through pydantic's own JSON schema
(``model_json_schema``), not through the writer: every field of each XRD's ``spec`` must be
in it and every field of it in the XRD, with the same type, default, enum, bounds, pattern
and required fields. A field the API server lets through and the model refuses fails a
user's XR with a fatal result after it was accepted; one the model lets through and the
API server refuses is a check nobody runs. CEL rules are not compared here
(``test_xrd_cel`` evaluates the XRDs' rules as the API server does).
"""

from pathlib import Path
from typing import Any

import pytest

from fleetgate.core import kinds
from schemas import xrds

KINDS = list(kinds.MODULES)
# What both must say alike wherever either says it.
KEYWORDS = (
    "type",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "required",
)

Node = dict[str, Any]


def _resolved(node: Node, defs: dict[str, Node]) -> Node:
    """``node`` with its ``$ref`` followed and an optional field's ``anyOf [X, null]`` read
    as X (absent and null are the same to a function reading an XR)."""
    while True:
        if "$ref" in node:
            node = {
                **defs[node["$ref"].rsplit("/", 1)[1]],
                **{k: v for k, v in node.items() if k != "$ref"},
            }
        elif "anyOf" in node:
            options = [o for o in node["anyOf"] if o.get("type") != "null"]
            if len(options) != 1:
                return node
            node = {**options[0], **{k: v for k, v in node.items() if k != "anyOf"}}
        else:
            return node


def _differences(xrd: Node, model: Node, defs: dict[str, Node], path: str) -> list[str]:
    model = _resolved(model, defs)
    found = [
        f"{path}: {kw} is {xrd.get(kw)!r} in the XRD, {model.get(kw)!r} in the model"
        for kw in KEYWORDS
        if xrd.get(kw) != model.get(kw)
    ]
    default = xrd.get("default")
    if default is not None and not isinstance(default, dict) and default != model.get("default"):
        found.append(
            f"{path}: default is {default!r} in the XRD, {model.get('default')!r} in the model"
        )
    ours, theirs = xrd.get("properties", {}), model.get("properties", {})
    found += [f"{path}.{name}: in the XRD only" for name in sorted(set(ours) - set(theirs))]
    found += [f"{path}.{name}: in the model only" for name in sorted(set(theirs) - set(ours))]
    for name in sorted(set(ours) & set(theirs)):
        found += _differences(ours[name], theirs[name], defs, f"{path}.{name}")
    if isinstance(xrd.get("items"), dict) and isinstance(model.get("items"), dict):
        found += _differences(xrd["items"], model["items"], defs, f"{path}[]")
    if isinstance(xrd.get("additionalProperties"), dict) and isinstance(
        model.get("additionalProperties"), dict
    ):
        found += _differences(
            xrd["additionalProperties"], model["additionalProperties"], defs, f"{path}{{}}"
        )
    return found


@pytest.mark.parametrize("path", list(xrds.generated()), ids=lambda p: p.name)
def test_each_definition_is_what_make_apis_writes(path: Path) -> None:
    assert path.read_text() == xrds.written(path), f"{path} is out of date: run make apis"


# Each schema written from a model: every kind's spec, and the status other kinds read.
WRITTEN = [(kind, "spec") for kind in KINDS] + [
    (kind, "status") for kind in ("InferenceCluster", "InferenceGateway")
]


@pytest.mark.parametrize(("kind", "part"), WRITTEN)
def test_the_xrd_and_the_model_agree(kind: str, part: str) -> None:
    schema = kinds.model(kind).model_json_schema(by_alias=True, mode="validation")
    defs = schema.get("$defs", {})
    model = _resolved(schema["properties"][part], defs)
    model = {
        **model,
        "properties": {
            k: v for k, v in model["properties"].items() if k not in xrds.CROSSPLANE_STATUS
        },
    }
    assert _differences(xrds.field(kind, part), model, defs, part) == []
