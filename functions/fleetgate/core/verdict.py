"""What a function says of one of its conditions, as one type for every function.

A step that cannot go on (no runnable provider, a gateway's input not there
yet) and a condition read back from the cluster both end as a condition on
the XR: a status, a reason a machine can match and a message a person can
act on, and sometimes a warning beside it (``Reconcile.report``).
"""

from typing import Literal, NamedTuple

Status = Literal["True", "False", "Unknown"]


class Verdict(NamedTuple):
    status: Status
    reason: str
    message: str
    warn: bool = False  # also a warning result: something a person must fix

    @classmethod
    def no(cls, reason: str, message: str) -> "Verdict":
        """A condition held False: what is missing or wrong, and why."""
        return cls("False", reason, message)
