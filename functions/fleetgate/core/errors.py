"""Errors a function turns into a fatal result rather than letting them escape."""

from collections.abc import Iterable

from pydantic import ValidationError


class InputError(Exception):
    """Input the function cannot compose from; the message names the field."""


def field_path(loc: tuple[int | str, ...], root: str = "") -> str:
    """Render a pydantic error location as ``spec.endpoints[2].weight``."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":  # pydantic's marker: the map key before it is what is wrong
            path += " (the key)"
        else:
            path = f"{path}.{part}" if path else part
    return path or "(root)"


def describe(err: ValidationError, root: str = "", limit: int = 5) -> str:
    """A one-line summary of a validation error naming each offending field.

    Input values are never echoed: a malformed Secret must not leak through an
    error message.
    """
    problems = [f"{field_path(e['loc'], root)}: {e['msg']}" for e in err.errors()[:limit]]
    more = err.error_count() - len(problems)
    if more > 0:
        problems.append(f"and {more} more")
    return "; ".join(problems)


def refuse_duplicates(what: str, names: Iterable[str]) -> None:
    """InputError when a name occurs twice among ``names`` (required resources of one kind).

    Crossplane lists each object once; a list that names one twice, in two
    states, would make the answer depend on the order it came in.
    """
    seen: set[str] = set()
    for name in sorted(names):
        if name in seen:
            raise InputError(f"required {what}: {name} appears more than once")
        seen.add(name)
