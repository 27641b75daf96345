"""The XRDs of ``apis/`` as data: one reader for everything that needs a field's schema
(the fault drills' defaults, the bad-input drill's breaks, tests at the API's limits), and
the writer that makes them from the kinds' models (``make apis``)."""

import ast
import functools
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from fleetgate.core import kinds
from fleetgate.model_deployment.catalog import ProviderCatalog

APIS = Path(__file__).resolve().parent.parent / "apis"

Schema = dict[str, Any]


def plural(kind: str) -> str:
    """The XRD's plural, which names its folder under ``apis/``: every kind takes an s."""
    return f"{kind.lower()}s"


@functools.cache
def schema(kind: str) -> Schema:
    """The XR's OpenAPI schema (its XRD's one version); callers must not mutate it."""
    xrd = yaml.safe_load((APIS / plural(kind) / "definition.yaml").read_text())
    found: Schema = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


def walk(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every node of an OpenAPI schema with its path: ``spec.endpoints[].weight``,
    ``spec.labels{}`` for a map's values."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}" if path else name)
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def field(kind: str, path: str) -> Schema:
    """The schema of one field, by its ``walk`` path (``spec.failover.retries``): what the
    API allows and defaults, for drills and tests that use or go up to it."""
    return dict(walk(schema(kind)))[path]


# --- the XRDs' spec schemas, written from the kinds' models ---------------------------
#
# The API is defined once, in ``fleetgate.core.kinds``: each field's name, type,
# default, enum and bounds are the model's, its description the attribute docstring
# under it, and what only the API server checks (CEL rules, list types) the model's
# ``json_schema_extra``. ``make apis`` writes each XRD's ``spec`` (and the ``status``
# other functions read) from them (``generated``); the rest of the XRD (names, printer
# columns, the other kinds' status) is written in the XRD itself. Validators in Python
# (an ``AfterValidator``, a ``model_validator``) have no schema: the XRD states the same
# rule in CEL, beside it in the model.

BOUNDS = {"minimum": "ge", "maximum": "le", "pattern": "pattern"}  # keyword: constraint
SIZES = {  # min_length / max_length, by the OpenAPI type they bound
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}
# Where each keyword stands in a node, so that a generated XRD reads like a written one.
ORDER = (
    "type",
    "description",
    "default",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "required",
    "properties",
    "items",
    "additionalProperties",
)


def _annotated(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """The type below ``Annotated`` and ``X | None``, with every metadata item on the way."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *more = typing.get_args(annotation)
            metadata = [*metadata, *more]
        elif origin in (typing.Union, types.UnionType):
            (annotation,) = [a for a in typing.get_args(annotation) if a is not type(None)]
        else:
            return annotation, metadata


def _constrained(node: Schema, metadata: list[Any]) -> Schema:
    for item in metadata:
        if isinstance(item, FieldInfo):
            _constrained(node, item.metadata)
            _extend(node, item.json_schema_extra)
            continue
        for keyword, attribute in BOUNDS.items():
            if getattr(item, attribute, None) is not None:
                node[keyword] = getattr(item, attribute)
        for keyword, attribute in zip(
            SIZES.get(node["type"], ()), ("min_length", "max_length"), strict=False
        ):  # only strings, lists and maps have a size
            if getattr(item, attribute, None) is not None:
                node[keyword] = getattr(item, attribute)
    return node


def _type_schema(annotation: Any, metadata: list[Any]) -> Schema:
    annotation, metadata = _annotated(annotation, metadata)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    node: Schema
    if origin is typing.Literal:
        node = {"type": "string", "enum": list(args)}
    elif annotation in (str, int, bool):
        node = {"type": {str: "string", int: "integer", bool: "boolean"}[annotation]}
    elif origin is list or (origin is tuple and args[1:] == (Ellipsis,)):
        node = {"type": "array", "items": _type_schema(args[0], [])}
    elif origin is dict and args[1] is Any:
        node = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    elif origin is dict:
        node = {"type": "object", "additionalProperties": _type_schema(args[1], [])}
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        node = object_schema(annotation)
    else:
        raise TypeError(f"no OpenAPI type for {annotation!r}")
    return _constrained(node, metadata)


def _docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Each field's attribute docstring, by Python name, from the model's own source."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        except (OSError, TypeError):
            continue
        assert isinstance(body, ast.ClassDef)
        for statement, following in itertools.pairwise(body.body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[statement.target.id] = " ".join(following.value.value.split())
    return found


def _default(info: FieldInfo, node: Schema) -> Any:
    """What the API server writes for the field when it is absent; None for nothing.

    A scalar's default is the model's. An empty list or map defaults nothing worth
    writing, and an object defaults to ``{}`` only where that fills in a default below it.
    """
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        filled = any("default" in child for child in node.get("properties", {}).values())
        return {} if filled else None
    if value in ([], {}, ()):
        return None
    return list(value) if isinstance(value, tuple) else value


def object_schema(model: type[BaseModel]) -> Schema:
    """The OpenAPI schema of ``model`` as the XRD states it."""
    described = _docstrings(model)
    properties, required = {}, []
    for name, info in model.model_fields.items():
        key = info.alias or name
        node = _type_schema(info.annotation, info.metadata)
        _extend(node, info.json_schema_extra)
        if name in described:
            node["description"] = described[name]
        if info.is_required():
            required.append(key)
        elif (default := _default(info, node)) is not None:
            node["default"] = default
        properties[key] = _ordered(node)
    node = {"type": "object", "properties": properties}
    if required:
        node["required"] = required
    _extend(node, model.model_config.get("json_schema_extra"))
    return _ordered(node)


RULES = "x-kubernetes-validations"


def _extend(node: Schema, extra: Any) -> None:
    """``extra``'s keywords into ``node``; CEL rules add to those already there."""
    if isinstance(extra, dict):
        node.update({k: v for k, v in extra.items() if k != RULES})
        if RULES in extra:
            node[RULES] = [*node.get(RULES, []), *extra[RULES]]


def _ordered(node: Schema) -> Schema:
    rank = {keyword: i for i, keyword in enumerate(ORDER)}
    return dict(sorted(node.items(), key=lambda kv: rank.get(kv[0], len(ORDER))))


def field_schema(model: type[BaseModel], name: str) -> Schema:
    """The schema of ``model``'s top-level field ``name`` (as spelt on the wire).

    A rule's message may say ``{path}`` where a model serves several fields (a label
    selector, a limit): each schema names the field it checks.
    """
    found: Schema = object_schema(model)["properties"][name]
    for path, node in walk(found, name):
        if RULES in node:  # new dicts: a rule is the model's own, shared by every field it checks
            node[RULES] = [
                {**rule, "message": rule["message"].replace("{path}", path)} for rule in node[RULES]
            ]
    return found


def spec_schema(kind: str) -> Schema:
    """The XRD's ``spec`` for ``kind``, from its model."""
    return field_schema(kinds.model(kind), "spec")


# Crossplane adds these to every XR's status schema itself; a model reads them all the same.
CROSSPLANE_STATUS = ("conditions",)


def status_schema(kind: str) -> Schema:
    """The XRD's ``status`` for a kind whose status other functions read through its model;
    other kinds' status is written in the XRD, beside the function that publishes it."""
    found = field_schema(kinds.model(kind), "status")
    for name in CROSSPLANE_STATUS:
        del found["properties"][name]
    return found


# compose-model-deployment's input: which providers a Composition offers.
CATALOG_CRD = (
    APIS.parent
    / "package/functions/compose-model-deployment/input"
    / "model-deployment.fn.fleetgate.dev_providercatalogs.yaml"
)


def _catalog_providers() -> Schema:
    return field_schema(ProviderCatalog, "providers")


Written = dict[str, Callable[[], Schema]]  # a property of the schema, and its source


def generated() -> dict[Path, Written]:
    """Each file ``make apis`` writes, and the properties of its schema it writes."""
    found: dict[Path, Written] = {
        APIS / plural(kind) / "definition.yaml": {"spec": functools.partial(spec_schema, kind)}
        for kind in kinds.MODULES
    }
    for kind in ("InferenceCluster", "InferenceGateway"):
        found[APIS / plural(kind) / "definition.yaml"]["status"] = functools.partial(
            status_schema, kind
        )
    found[CATALOG_CRD] = {"providers": _catalog_providers}
    return found


# --- writing the XRDs ------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """YAML as the XRDs are written: lists indented under their key, long text folded and
    short text on one line, a value shared by two nodes written out twice (no anchors)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def write_plain(self, text: str, split: bool = True) -> None:
        super().write_plain(text, split=False)

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = ">" if len(value) > 72 and "\n" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def written(path: Path) -> str:
    """The XRD or CRD at ``path`` as ``make apis`` writes it: as it stands, with the
    properties ``generated`` names written from their models."""
    definition = yaml.safe_load(path.read_text())
    (version,) = definition["spec"]["versions"]
    for name, source in generated()[path].items():
        version["schema"]["openAPIV3Schema"]["properties"][name] = source()
    text = yaml.dump(definition, Dumper=_Dumper, sort_keys=False, width=84, allow_unicode=True)
    if yaml.safe_load(text) != definition:  # folding must never change a value
        raise AssertionError(f"{path} does not read back as written")
    lines = path.read_text().splitlines(keepends=True)
    header = itertools.takewhile(lambda line: line.startswith("#"), lines)
    return "".join(header) + text


def main() -> None:
    """Write every XRD's ``spec``, and the provider catalog's CRD, from the models
    (``make apis``)."""
    for path in generated():
        text = written(path)
        if path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(APIS.parent)}")


if __name__ == "__main__":
    main()
