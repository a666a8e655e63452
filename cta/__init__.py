"""Controlled tabular adjustment (Cox 2000, 2003) with cvxpy and HiGHS.

Build a table (:func:`table_from_long`, :func:`table_from_microdata`, :func:`link_tables`), decide its
sensitive cells (:func:`protection_from_table`, :func:`protection_from_rules`), adjust it
(:func:`adjust_table`, its options in :class:`AdjustmentSettings` and :class:`SolverSettings`) and measure the
result (:func:`quality_report`). ``bayessdc.adjust`` runs these steps and writes the release/private output
folder. :func:`audit_table` audits any published table (adjusted, suppressed or both) as an intruder would: the
interval each sensitive cell is known to lie in, by linear programming; :func:`suppress_table` suppresses the
sensitive cells and the least-cost complementary cells that protect them (``bayessdc.suppress`` writes its folder).

References
----------
.. [1] Cox, L. H. (2003). *Preserving confidentiality and quality of tabular data: are safe data necessarily
    inferior data?* Bureau of Transportation Statistics Confidentiality Seminar, Washington, DC, 17 September.
"""

from .audit import AuditInput, audit_table
from .examples import cox_4x9_frame
from .heuristic import balanced_directions
from .problem import Adjustment, InfeasibleError, adjust_table
from .quality import cell_statistics, protection_shortfalls, quality_report
from .rules import (
    DominanceRule,
    PPercentRule,
    Protection,
    ThresholdRule,
    parse_rule,
    protection_from_rules,
    protection_from_table,
)
from .settings import OBJECTIVES, AdjustmentSettings, SolverSettings
from .suppression import Suppressed, suppress_table
from .table import (
    TOTAL_LABEL,
    Dimension,
    Table,
    link_tables,
    parse_dimensions,
    table_from_long,
    table_from_microdata,
)

__all__ = [
    "OBJECTIVES",
    "TOTAL_LABEL",
    "Adjustment",
    "AdjustmentSettings",
    "AuditInput",
    "Dimension",
    "DominanceRule",
    "InfeasibleError",
    "PPercentRule",
    "Protection",
    "SolverSettings",
    "Suppressed",
    "Table",
    "ThresholdRule",
    "adjust_table",
    "audit_table",
    "balanced_directions",
    "cell_statistics",
    "cox_4x9_frame",
    "link_tables",
    "parse_dimensions",
    "parse_rule",
    "protection_from_rules",
    "protection_from_table",
    "protection_shortfalls",
    "quality_report",
    "suppress_table",
    "table_from_long",
    "table_from_microdata",
]
