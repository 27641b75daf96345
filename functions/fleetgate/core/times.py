"""Times as the API server writes them (RFC 3339, e.g. ``2026-12-01T12:00:00Z``)."""

import datetime


def parse(value: object) -> datetime.datetime | None:
    """An RFC 3339 time with its zone; None if ``value`` is not one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None
