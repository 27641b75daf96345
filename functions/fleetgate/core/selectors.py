"""Requirement selectors beyond ``function.Selector``'s by-name and by-labels forms."""

from dataclasses import dataclass

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from fleetgate.core.function import Selector


@dataclass(frozen=True)
class Every(Selector):
    """Every object of a kind (in ``namespace`` if set, else cluster-wide).

    ``Selector`` with no labels leaves the selector's ``match`` unset, because
    an empty label map does not mark the field present: Crossplane refuses
    such a selector and ``crossplane render`` resolves it to nothing. An
    explicitly present, empty ``matchLabels`` matches every object.
    """

    def to_proto(self) -> fnv1.ResourceSelector:
        sel = super().to_proto()
        # match is a oneof: marking matchLabels present would drop a matchName.
        if self.name is None:
            sel.match_labels.SetInParent()
        return sel


# Both names are in use across the functions; one class behind them.
EveryObject = Every
