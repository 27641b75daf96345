"""Breaking a well-formed input in one place, knowing what the function must say about it.

The fields a function validates are read from the same pydantic models it
parses with (``fleetgate.core.kinds``): every field an XR's model declares
and the input holds is a target. A value of the wrong JSON type, a required
field removed, or a declared bound exceeded must give a fatal result naming
that field (``Broken.path``). Other breakage has no single right answer but
must never crash the function: huge, unicode or deeply nested values where
nothing is declared, a required resource of another kind, an object listed
twice, observed resources with garbage status.
"""

import copy
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from annotated_types import Ge, Le, MaxLen, MinLen
from hypothesis import strategies as st
from pydantic import BaseModel

from fleetgate.core import kinds
from fleetgate.core.errors import field_path
from tests.hardening.harness import Obj, Walk

Path = tuple[str | int, ...]

COMPOSITE_MODELS: dict[str, type[BaseModel]] = {kind: kinds.model(kind) for kind in kinds.MODULES}


@dataclass(frozen=True)
class Shape:
    """What a model field holds, as far as breaking it goes."""

    kind: Literal["model", "list", "dict", "str", "int", "bool", "any"]
    nullable: bool = False
    model: type[BaseModel] | None = None
    item: "Shape | None" = None
    bounds: tuple[tuple[str, int], ...] = ()

    def bound(self, name: str) -> int | None:
        return dict(self.bounds).get(name)


def _bounds(metadata: list[Any]) -> tuple[tuple[str, int], ...]:
    found = []
    for m in metadata:
        if isinstance(m, MaxLen):
            found.append(("max_length", m.max_length))
        elif isinstance(m, MinLen):
            found.append(("min_length", m.min_length))
        elif isinstance(m, Ge):
            found.append(("ge", int(m.ge)))  # type: ignore[call-overload]
        elif isinstance(m, Le):
            found.append(("le", int(m.le)))  # type: ignore[call-overload]
    return tuple(found)


SCALARS: dict[Any, Literal["str", "int", "bool"]] = {str: "str", int: "int", bool: "bool"}


def shape(annotation: Any, metadata: tuple[tuple[str, int], ...] = ()) -> Shape:
    """The Shape of a type annotation (Annotated, Optional, containers, models)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    found = Shape("any")
    if origin is typing.Annotated:
        extra = [m for info in args[1:] for m in getattr(info, "metadata", [info])]
        found = shape(args[0], metadata + _bounds(extra))
    elif origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = shape(rest[0], metadata) if len(rest) == 1 else Shape("any")
        found = Shape(inner.kind, True, inner.model, inner.item, inner.bounds)
    elif origin in (list, tuple, dict):
        kind: Literal["list", "dict"] = "dict" if origin is dict else "list"
        found = Shape(kind, item=shape(args[-1] if kind == "dict" else args[0]), bounds=metadata)
    elif origin is Literal:
        found = Shape("str", bounds=metadata)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found = Shape("model", model=annotation)
    elif annotation in SCALARS:
        found = Shape(SCALARS[annotation], bounds=metadata)
    return found


@dataclass(frozen=True)
class Target:
    path: Path
    shape: Shape
    required: bool


def targets(model: type[BaseModel], data: Any, path: Path = ()) -> list[Target]:
    """Every declared field present in ``data``, depth first."""
    if not isinstance(data, dict):
        return []
    found = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key not in data:
            continue
        field_shape = shape(info.annotation, _bounds(info.metadata))
        here = (*path, key)
        found.append(Target(here, field_shape, info.is_required()))
        found += _inside(field_shape, data[key], here)
    return found


def _inside(outer: Shape, value: Any, path: Path) -> list[Target]:
    if outer.kind == "model" and outer.model is not None:
        return targets(outer.model, value, path)
    item = outer.item
    if item is None or item.kind == "any":
        return []
    entries: list[tuple[str | int, Any]] = []
    if outer.kind == "list" and isinstance(value, list):
        entries = list(enumerate(value))
    elif outer.kind == "dict" and isinstance(value, dict):
        entries = sorted(value.items())
    found = []
    for key, child in entries:
        found.append(Target((*path, key), item, False))
        found += _inside(item, child, (*path, key))
    return found


def wrong_values(s: Shape) -> list[Any]:
    """Values no field of this shape accepts, even in pydantic's lax mode."""
    values: list[Any] = {
        "str": [12345, ["x"], {"k": "v"}, True],
        "int": ["many", ["x"], {"k": 1}, 1.5],
        "bool": ["maybe", ["x"], {"k": 1}, 2],
        "list": [{"k": 1}, "x", 7],
        "dict": [["x"], "x", 7],
        "model": [["x"], "x", 7],
        "any": [],
    }[s.kind]
    return values if s.nullable else [*values, None]


def beyond_bounds(s: Shape, current: Any) -> list[Any]:
    """Values one step past each bound the shape declares."""
    out: list[Any] = []
    max_length, min_length = s.bound("max_length"), s.bound("min_length")
    if s.kind == "str":
        if max_length is not None:
            out.append("x" * (max_length + 1))
        if min_length:
            out.append("")
    elif s.kind == "list" and isinstance(current, list) and current:
        if max_length is not None:
            out.append([copy.deepcopy(current[0]) for _ in range(max_length + 1)])
        if min_length:
            out.append([])
    elif s.kind == "dict" and isinstance(current, dict) and max_length is not None:
        sample = next(iter(current.values()), "v")
        grown = dict(current)
        for i in range(max_length + 1):
            grown.setdefault(f"k{i}", copy.deepcopy(sample))
        out.append(grown)
    elif s.kind == "int":
        if s.bound("ge") is not None:
            out.append(s.bound("ge") - 1)  # type: ignore[operator]
        if s.bound("le") is not None:
            out.append(s.bound("le") + 1)  # type: ignore[operator]
    return out


def _copy(data: Obj) -> Obj:
    """A copy sharing nothing (deepcopy keeps two references to one dict as one)."""
    out: Obj = json.loads(json.dumps(data))
    return out


def put(data: Obj, path: Path, value: Any) -> Obj:
    out = _copy(data)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def remove(data: Obj, path: Path) -> Obj:
    out = _copy(data)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return out


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = {f"level{i}": [value]} if i % 2 else {f"level{i}": value}
    return value


HUGE = "Ω" * 200_000
ODD_TEXT = ["", " ", "\u0000", "\u202e\u0645\u062b\u0627\u0644", "🤖" * 300, "a\nb\tc", HUGE]


@dataclass(frozen=True)
class Broken:
    """An input broken in one place; ``path`` is what a fatal must name (None: no fatal needed)."""

    xr: Obj
    world: list[Obj]
    observed: dict[str, Obj]
    description: str
    path: str | None


@st.composite
def wrong_type(draw: st.DrawFn, walked: Walk) -> Broken:
    target = draw(st.sampled_from([t for t in _targets(walked) if wrong_values(t.shape)]))
    value = draw(st.sampled_from(wrong_values(target.shape)))
    where = field_path(target.path)
    return walked_with(walked, put(walked.xr, target.path, value), f"{where} = {value!r}", where)


@st.composite
def removed(draw: st.DrawFn, walked: Walk) -> Broken:
    choices = [t for t in _targets(walked) if t.required and isinstance(t.path[-1], str)]
    target = draw(st.sampled_from(choices))
    where = field_path(target.path)
    return walked_with(walked, remove(walked.xr, target.path), f"{where} removed", where)


@st.composite
def beyond_bound(draw: st.DrawFn, walked: Walk) -> Broken:
    xr = walked.xr
    choices = [(t, v) for t in _targets(walked) for v in beyond_bounds(t.shape, _get(xr, t.path))]
    target, value = draw(st.sampled_from(choices))  # metadata.name always has one
    where = field_path(target.path)
    text = f"{where} beyond its bound ({_short(value)})"
    return walked_with(walked, put(xr, target.path, value), text, where)


@st.composite
def odd_values(draw: st.DrawFn, walked: Walk) -> Broken:
    """Where nothing is declared: an extra field, an annotation."""
    spot = draw(st.sampled_from([("spec", "x-extra"), ("metadata", "annotations", "note"), ("x",)]))
    value = draw(st.sampled_from([*ODD_TEXT, nested(40), [nested(5)] * 50]))
    broken = copy.deepcopy(walked.xr)
    node = broken
    for part in spot[:-1]:
        node = node.setdefault(part, {})
    node[spot[-1]] = value
    return walked_with(walked, broken, f"{'.'.join(spot)} = {_short(value)}", None)


@st.composite
def wrong_kind(draw: st.DrawFn, walked: Walk) -> Broken:
    """Crossplane answers a requirement with the kind asked for; this world answers with others."""
    world = walked.world
    imposters = [
        {**copy.deepcopy(obj), "kind": other}
        for obj in world
        for other in sorted({o["kind"] for o in world} - {obj["kind"]})
    ]
    picked = draw(st.lists(st.sampled_from(imposters), min_size=1, max_size=3))
    return Broken(walked.xr, world + picked, walked.observed, "objects of the wrong kind", None)


@st.composite
def listed_twice(draw: st.DrawFn, walked: Walk) -> Broken:
    """An object listed twice, the copy in another state."""
    obj = copy.deepcopy(draw(st.sampled_from(walked.world)))
    obj["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    text = f"{obj['kind']} {obj['metadata']['name']} listed twice"
    return Broken(walked.xr, [*walked.world, obj], walked.observed, text, None)


@st.composite
def required_wrong_type(draw: st.DrawFn, walked: Walk) -> Broken:
    """Another XR as the function reads it, a wrong type wherever its model declares a field."""
    world = walked.world
    obj = draw(st.sampled_from([o for o in world if o["kind"] in COMPOSITE_MODELS]))
    model = COMPOSITE_MODELS[obj["kind"]]
    target = draw(st.sampled_from([t for t in targets(model, obj) if wrong_values(t.shape)]))
    value = draw(st.sampled_from(wrong_values(target.shape)))
    text = f"required {obj['kind']} {obj['metadata']['name']}: {field_path(target.path)}"
    others = [o for o in world if o is not obj]
    broken = [*others, put(obj, target.path, value)]
    return Broken(walked.xr, broken, walked.observed, f"{text} = {value!r}", None)


@st.composite
def malformed_secret(draw: st.DrawFn, walked: Walk) -> Broken:
    """A Secret whose data is not a map of strings (the API server never hands one out)."""
    secrets = [o for o in walked.world if o["kind"] == "Secret"]
    if not secrets:
        return Broken(walked.xr, walked.world, walked.observed, "no Secret to break", None)
    obj = draw(st.sampled_from(secrets))
    data = obj.get("data")
    values = list(data.values()) if isinstance(data, dict) else []
    field = draw(st.sampled_from(["data", "stringData"]))
    shape = draw(st.sampled_from([values, "text", 7, {"k": values}, {"k": None}]))
    broken = {**obj, field: shape}
    world = [broken if o is obj else o for o in walked.world]
    text = f"Secret {obj['metadata']['name']}: {field} = {_short(shape)}"
    return Broken(walked.xr, world, walked.observed, text, None)


GARBAGE = [
    "not a status",
    ["x"],
    {"conditions": "Ready"},
    {"conditions": ["Ready", 7, None]},
    {"atProvider": ["x"]},
    {"atProvider": {"manifest": "x"}},
    {"atProvider": {"manifest": {"status": ["x"], "data": ["x"], "spec": "x"}}},
    {"atProvider": {"manifest": {"status": {"addresses": "x", "conditions": [1]}}}},
    {
        "conditions": ["x", {"type": "Ready", "status": "False"}],
        "atProvider": {
            "manifest": {"status": {"conditions": ["x", {"type": "Accepted", "status": "False"}]}}
        },
    },
    {"conditions": [{"type": "RouteAccepted", "status": ["x"], "message": 7}]},
]


@st.composite
def garbage_observed(draw: st.DrawFn, walked: Walk) -> Broken:
    """An observed resource whose status (or spec, or metadata) is garbage."""
    observed = walked.observed
    if not observed:
        return Broken(walked.xr, walked.world, observed, "nothing observed", None)
    name = draw(st.sampled_from(sorted(observed)))
    spot = draw(st.sampled_from(["status", "spec", "metadata"]))
    garbage = draw(st.sampled_from(GARBAGE))
    bad = {**observed, name: {**observed[name], spot: garbage}}
    return Broken(walked.xr, walked.world, bad, f"observed {name} {spot} = {garbage!r}", None)


BREAKAGES = [
    wrong_type,
    removed,
    beyond_bound,
    odd_values,
    wrong_kind,
    listed_twice,
    required_wrong_type,
    malformed_secret,
    garbage_observed,
]


def mutate(walked: Walk) -> st.SearchStrategy[Broken]:
    """One breakage of the walked input (the XR, the world or the observed resources)."""
    return st.one_of([breakage(walked) for breakage in BREAKAGES])


def walked_with(walked: Walk, xr: Obj, description: str, path: str | None) -> Broken:
    return Broken(xr, walked.world, walked.observed, description, path)


def _targets(walked: Walk) -> list[Target]:
    return targets(COMPOSITE_MODELS[walked.kind], walked.xr)


def _get(data: Any, path: Path) -> Any:
    for part in path:
        data = data[part]
    return data


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
