"""Selectors for required resources beyond one object by name."""

from dataclasses import dataclass

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.function import Selector


@dataclass(frozen=True)
class Every(Selector):
    """Every object of a kind (cluster-scoped, or in ``namespace``).

    ``Selector`` without labels leaves the request's ``match`` unset, because
    an empty label map does not mark the field present: Crossplane refuses
    such a selector and ``crossplane render`` matches nothing. An explicitly
    present, empty ``matchLabels`` is what selects every object.
    """

    def to_proto(self) -> fnv1.ResourceSelector:
        sel = super().to_proto()
        if self.name is None:
            sel.match_labels.SetInParent()
        return sel
