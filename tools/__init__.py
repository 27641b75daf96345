"""The pinned Go tools: each ``go.mod`` here pins one, and ``pinned`` finds what ``make``
built from it."""
