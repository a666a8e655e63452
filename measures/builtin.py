"""The built-in measures, registered in this order (importing the module registers them)."""

from __future__ import annotations

from . import (  # noqa: F401
    attacks,
    attribute,
    audit,
    copies,
    household_tables,
    households,
    identification,
    importance,
    intruder,
    protection,
    proximity,
    regression,
    removal,
    strata,
    tables,
    uniques,
    utility,
)  # fmt: skip

__all__: list[str] = []
