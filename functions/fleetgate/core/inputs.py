"""A function's Composition input: the step's ``input``, typed and validated at the edge."""

from fleetgate.core import structs
from fleetgate.core.models import C, parse
from fleetgate.core.reconcile import Reconcile


def function_input(rec: Reconcile, model: type[C], default: C) -> C:
    """The step's input as ``model``; ``default`` when the Composition gives none.

    A malformed input is an InputError naming the field (``invalid
    Composition input <Kind>: <field>: …``): a platform team's typo in a
    Composition is a clear error, never a setting silently ignored.
    """
    if not rec.req.HasField("input") or not rec.req.input.fields:
        return default
    data = structs.to_dict(rec.req.input)
    kind = data.get("kind")
    label = kind[:63] if isinstance(kind, str) else "?"
    return parse(model, data, f"Composition input {label}")
