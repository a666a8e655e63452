"""The disclosure policy: the criteria every release is judged by before anything is published.

A policy is a TOML file an agency versions and a review board reads: a list of criteria, each naming a
measure (:mod:`bayessdc.measures`), the subsets it applies to, the statistic judged and a threshold, and the
source of that threshold; and the measures it lists as reported but not judged, with why. For example::

    [policy]
    name = "agency-2027"
    description = "Our board's rules for public-use files"

    [[criterion]]
    measure = "expected_match_risk"
    subset = "*"                 # every knowledge set; or one, such as "sex+age+commune"
    statistic = "upper"          # pooled | upper | lower | worst
    at_most = "inherent_max"     # a number, or one of the measure's references
    source = "Hu & Savitsky, Section 4.1"

    [[reported]]
    measure = "copied_records"
    why = "no published threshold"

Statistics: ``pooled``, the mean over the m datasets; ``upper`` and ``lower``, the ends of its 95% Monte
Carlo interval (``pooled +- t(0.975, m - 1) sd / sqrt(m)``); ``worst``, the worst single dataset. Judged
against a reference that is itself a Monte Carlo mean (the inherent bounds: the mean of S repetitions), ``upper``
and ``lower`` are the ends of Welch's interval, which allows for the error of both: a release is refused for a
risk above the inherent maximum only when it is above it beyond the noise of the m datasets and of the S
repetitions together. A threshold is
``at_most`` (a risk) or ``at_least`` (a protection, such as the false match rate), each a number or the name
of a reference of the measure (``inherent_max``, ``held_out``, ``chance`` ...). A criterion may be limited
to some synthesizers (``applies_to = ["cart"]``); a criterion whose measure a release has not got is
listed as not applicable, never as passed.

A criterion may name a utility measure as well: a **utility floor**, such as ``measure = "pmse_ratio"`` with
``at_most = 10``, ``measure = "table_deviation"`` with ``subset = "two-way"`` and ``at_most = 500``, or
``measure = "table_tau"`` with ``at_least = 0.9``. The levers the pipeline applies without a refit (the removal of
replicated uniques, a synthesizer's settings drawn from the same posterior) lower risk at a cost in utility,
which each verdict records (:attr:`Verdict.lever_costs`, :mod:`bayessdc.levers`); a release whose utility
figure crosses the floor fails the policy as one whose risk is too high does, and the pipeline tries the next
setting, or refuses.

:func:`default_policy` is bayessdc's own (``bayessdc policy`` prints it): each criterion taken from a paper
or a published practice, which it names. :func:`judge` applies a policy to a release's measures; the
pipeline does so for every synthesizer after the precision gates and refuses a release that fails
(:class:`DisclosureRefused`, exit status 3 on the command line).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from .levers import LeverCost

__all__ = [
    "POLICY_TABLE_CAPTION",
    "STATISTICS",
    "TABLE_COLUMNS",
    "Criterion",
    "DisclosureRefused",
    "Judgement",
    "Policy",
    "Verdict",
    "default_policy",
    "judge",
    "load_policy",
]

#: The statistics a criterion may judge.
STATISTICS = ("pooled", "upper", "lower", "worst")
#: The columns of the policy's table (:meth:`Verdict.table`).
TABLE_COLUMNS = (
    "criterion", "figure", "95% interval", "unit", "reference", "reference 95% interval", "test", "verdict", "source",
)  # fmt: skip
#: What the policy's table shows, as its caption says in the report and in a notebook.
POLICY_TABLE_CAPTION = (
    "each criterion: the release's figure (pooled over the m datasets) with its own 95% Monte Carlo interval and "
    "unit; the reference (or the fixed threshold) with the 95% interval of its mean over its repetitions; the test "
    "judged (against a reference of repetitions, the difference figure - reference with its Welch 95% interval, "
    "which allows for the Monte Carlo error of both; otherwise the statistic named against the number); and the "
    "verdict. The intervals of a figure that cannot be negative (a rate, a share, a count) are shown truncated at 0."
)


@dataclass(frozen=True)
class Criterion:
    """One rule of a policy.

    Attributes
    ----------
    measure
        The measure's registered name.
    subset
        ``"*"`` (every subset of the measure) or one subset's name.
    statistic
        One of :data:`STATISTICS`.
    at_most, at_least
        The threshold (exactly one is given): a number, or the name of one of the measure's references.
    source
        Where the threshold comes from (a paper's section, a published practice).
    applies_to
        Synthesizers the criterion applies to (empty: all).
    name
        A short name for messages (default: derived from the rule).
    """

    measure: str
    statistic: str = "pooled"
    subset: str = "*"
    at_most: float | str | None = None
    at_least: float | str | None = None
    source: str = ""
    applies_to: tuple[str, ...] = ()
    name: str = ""

    @property
    def threshold(self) -> float | str:
        """The threshold, a number or a reference name."""
        return self.at_most if self.at_most is not None else self.at_least

    @property
    def direction(self) -> str:
        """``"at_most"`` or ``"at_least"``."""
        return "at_most" if self.at_most is not None else "at_least"

    def label(self) -> str:
        """The rule in words: ``expected_match_risk[*] pooled at most inherent_max``."""
        if self.name:
            return self.name
        words = "at most" if self.direction == "at_most" else "at least"
        return f"{self.measure}[{self.subset}] {self.statistic} {words} {self.threshold}"

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> Criterion:
        """The rule of :meth:`to_dict` (as ``release/model.json`` states it)."""
        fields = {k: v for k, v in payload.items() if k in cls.__dataclass_fields__}
        if "applies_to" in fields:
            fields["applies_to"] = tuple(fields["applies_to"])
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """The rule as written in a policy file (JSON-ready)."""
        out: dict[str, Any] = {"measure": self.measure, "subset": self.subset, "statistic": self.statistic}
        out[self.direction] = self.threshold
        if self.applies_to:
            out["applies_to"] = list(self.applies_to)
        if self.source:
            out["source"] = self.source
        if self.name:
            out["name"] = self.name
        return out


@dataclass(frozen=True)
class Policy:
    """A disclosure policy: its criteria, the measures it reports without judging, its name and digest.

    Attributes
    ----------
    name, description
        As the file states them.
    criteria
        The rules every release must meet.
    reported
        ``{measure: why}``: figures shown but not judged (no grounded threshold).
    digest
        SHA-256 of the file's text (of the built-in file for the default policy; of the criteria and reported
        measures for a policy built in Python).
    path
        The file it was read from (``None`` for the built-in policy).
    builtin
        Whether this is bayessdc's default policy.
    """

    name: str
    criteria: tuple[Criterion, ...]
    reported: dict[str, str] = field(default_factory=dict)
    description: str = ""
    digest: str = ""
    path: str | None = None
    builtin: bool = False

    def __post_init__(self) -> None:
        if not self.digest:  # a policy built in Python: the digest of its criteria and reported measures
            import json

            text = json.dumps([[c.to_dict() for c in self.criteria], self.reported], sort_keys=True)
            object.__setattr__(self, "digest", hashlib.sha256(text.encode("utf-8")).hexdigest())

    def check_columns(self, columns: Any, synthesizer: str) -> None:
        """Refuse a criterion applying to ``synthesizer`` whose subset names columns not among ``columns`` (a
        knowledge set, a secret, the sources of a linkage), before anything is fitted.

        Raises
        ------
        bayessdc.InputError
            Naming the criterion, its subset and the unknown columns, and the columns the data has.
        """
        from bayessdc.measures import registry

        measures, have = registry(), [str(c) for c in columns]
        for criterion in self.criteria:
            if criterion.applies_to and synthesizer not in criterion.applies_to:
                continue
            measure = measures.get(criterion.measure)
            if criterion.subset == "*" or measure is None or not measure.subset_columns:
                continue
            named = [c for c in re.split(r"\s*[+|]\s*", criterion.subset) if c]
            unknown = [c for c in named if c not in have]
            if unknown:
                raise InputError(
                    f"policy {self.name!r}: criterion {criterion.label()!r} names column(s) "
                    f"{', '.join(map(repr, unknown))} the data has not got (its columns: {', '.join(have)}); "
                    "the criterion would never apply, and the release would pass it unjudged"
                )

    def describe(self) -> dict[str, Any]:
        """What ``release/model.json`` states: name, digest, the criteria (never an estimate)."""
        return {
            "name": self.name,
            "builtin": self.builtin,
            "digest": f"sha256:{self.digest}",
            "description": self.description,
            "criteria": [c.to_dict() for c in self.criteria],
            "reported_not_judged": dict(self.reported),
        }


class DisclosureRefused(Exception):
    """The release failed its disclosure policy: nothing was released.

    Attributes
    ----------
    verdict
        The policy's verdict (:class:`Verdict`) of the last setting tried.
    tried
        The verdicts of every setting tried (the levers that need no refit), in order.
    levers
        The synthesizer's levers that lower the failing risks, in words.
    """

    def __init__(self, verdict: Verdict, levers: list[str], tried: list[Verdict] | None = None) -> None:
        self.verdict = verdict
        self.levers = levers
        self.tried = tried or [verdict]
        super().__init__(self._message())

    def _message(self) -> str:
        failed = self.verdict.failed()
        lines = [f"the release fails {len(failed)} criterion(s) of the disclosure policy {self.verdict.policy.name!r}:"]
        lines += [f"  - {j.sentence()}" for j in failed]
        if len(self.tried) > 1:
            settings = ", ".join(v.setting_text() for v in self.tried)
            lines.append(f"  settings tried from the same posterior: {settings}; none meets the policy")
        costs = [cost for v in self.tried for cost in v.lever_costs if cost.setting]
        lines += [f"  utility under {cost.sentence()}" for cost in costs]
        if self.levers:
            lines.append("  what lowers these risks: " + "; ".join(self.levers))
        lines.append("  nothing was released; a policy of your own (policy=...) is the only way past, and is recorded")
        return "\n".join(lines)


@dataclass
class Judgement:
    """One criterion applied to one subset of a release.

    What is judged and what is shown are kept apart: :attr:`figure` is the statistic the verdict compares (against
    a reference of repetitions, an end of Welch's interval of the difference shifted by the reference, which may
    be below 0 for a rate of 0), while the table and the sentence show the figure (:attr:`pooled`), the reference
    and the test of their difference each on its own.

    Attributes
    ----------
    figure, interval
        The statistic judged and the interval it is an end of: the pooled figure, an end of its own 95% Monte
        Carlo interval or the worst dataset; or, for ``lower``/``upper`` against a reference of repetitions, the
        end of Welch's interval of ``pooled - reference`` shifted by the reference.
    threshold, threshold_name
        The number the statistic is compared with (a reference's value, the mean of its repetitions, or a fixed
        threshold) and its name (the number itself for a fixed threshold).
    passed, note
        The verdict (``None``: not judged) and why, or how the interval was formed.
    unit
        The figure's unit (:attr:`bayessdc.measures.MeasureResult.unit`).
    pooled, pooled_interval
        The pooled figure (the mean over the m datasets) and its own 95% Monte Carlo interval (``None`` for a
        figure of the datasets jointly).
    reference_interval, repetitions
        The 95% interval of the reference's mean over its S repetitions (``mean +- t(0.975, S - 1) se``) and S
        (``None`` for an exact reference or a fixed threshold).
    difference, difference_interval, df
        ``pooled - reference``, its Welch 95% interval and degrees of freedom (only for a criterion judged by
        Welch's interval).
    nonnegative
        Whether the figure cannot be negative (a risk whose every dataset is >= 0: a rate, a share, a count):
        its interval and the reference's are shown truncated at 0.
    """

    criterion: Criterion
    subset: str
    figure: float | None
    interval: tuple[float, float] | None
    threshold: float | None
    threshold_name: str
    passed: bool | None
    note: str = ""
    unit: str = ""
    pooled: float | None = None
    pooled_interval: tuple[float, float] | None = None
    reference_interval: tuple[float, float] | None = None
    repetitions: int | None = None
    difference: float | None = None
    difference_interval: tuple[float, float] | None = None
    df: float | None = None
    nonnegative: bool = False

    @property
    def shown_figure(self) -> float | None:
        """The figure shown: the pooled figure (the judged statistic only for a judgement made without it)."""
        if self.pooled is not None:
            return self.pooled
        return self.figure if self.difference is None else None

    def _floor(self, interval: tuple[float, float] | None) -> tuple[float, float] | None:
        if interval is None or not self.nonnegative:
            return interval
        return (max(interval[0], 0.0), max(interval[1], 0.0))

    @property
    def figure_interval(self) -> tuple[float, float] | None:
        """The pooled figure's own 95% interval as shown (truncated at 0 for a figure that cannot be negative)."""
        return self._floor(self.pooled_interval if self.pooled is not None else self.interval)

    @property
    def reference_range(self) -> tuple[float, float] | None:
        """The reference mean's 95% interval as shown (truncated at 0 for a figure that cannot be negative)."""
        return self._floor(self.reference_interval)

    def _fixed(self) -> bool:
        return self.threshold is not None and self.threshold_name == _fmt(self.threshold)

    def reference_text(self) -> str:
        """The reference by name and value (``inherent_max 0.6667``), or the fixed threshold (``fixed 0.05``)."""
        if self.threshold is None:
            return "n/a"
        if self._fixed():
            return f"fixed {_fmt(self.threshold)}"
        return f"{self.threshold_name} {_fmt(self.threshold)}"

    def reference_interval_text(self) -> str:
        """The reference's own 95% interval in words (``n/a`` for a fixed threshold)."""
        if self.reference_range is not None:
            low, high = self.reference_range
            return f"{_fmt(low)} to {_fmt(high)} ({self.repetitions} repetitions)"
        if self.threshold is None or self._fixed():
            return "n/a"
        return "none (taken as exact)"

    def test(self) -> str:
        """What was compared, in a few words: ``difference 1.2e-05, Welch 95% interval -3.1e-06 to 2.7e-05: lower
        end <= 0 (not above the reference)`` or ``upper end 0.031 <= 0.05``."""
        c = self.criterion
        if self.passed is None:
            return f"not judged: {self.note}" if self.note else "not judged"
        at_most = c.direction == "at_most"
        op = ("<=" if self.passed else ">") if at_most else (">=" if self.passed else "<")
        if self.difference_interval is not None and self.difference is not None:
            low, high = self.difference_interval
            end = "lower" if c.statistic == "lower" else "upper"
            gloss = {
                ("at_most", "lower"): ("not above", "above"),
                ("at_most", "upper"): ("at or below", "not below"),
                ("at_least", "lower"): ("at or above", "not above"),
                ("at_least", "upper"): ("not below", "below"),
            }[(c.direction, end)][0 if self.passed else 1]
            return (f"difference {_fmt(self.difference)}, Welch 95% interval {_fmt(low)} to {_fmt(high)}: {end} end "
                    f"{op} 0 ({gloss} the reference)")  # fmt: skip
        words = {"pooled": "pooled", "worst": "worst dataset", "lower": "lower end", "upper": "upper end"}
        value = self.figure
        if self.nonnegative and value is not None and value < 0 and self.threshold is not None:
            floored = 0.0 <= self.threshold if at_most else 0.0 >= self.threshold
            value = 0.0 if floored == self.passed else value  # shown as 0 unless that would reverse the verdict
        return f"{words.get(c.statistic, c.statistic)} {_fmt(value)} {op} {_fmt(self.threshold)}"

    def verdict_word(self) -> str:
        """``meets``, ``FAILS`` or ``not judged``."""
        return "not judged" if self.passed is None else ("meets" if self.passed else "FAILS")

    def sentence(self) -> str:
        """The judgement in one sentence, for a refusal or the report: the figure with its interval, the
        reference with its own, the test and the verdict."""
        c = self.criterion
        if self.passed is None:
            return f"{c.measure} [{self.subset}]: not judged ({self.note})"
        words = "at most" if c.direction == "at_most" else "at least"
        span = self.figure_interval
        details = [self.unit] if self.unit else []
        details += [f"95% interval {_fmt(span[0])} to {_fmt(span[1])}"] if span else []
        figure = f"figure {_fmt(self.shown_figure)}" + (f" ({'; '.join(details)})" if details else "")
        named = ""
        if not self._fixed():
            extra = self.reference_range
            named = f" ({self.threshold_name}" + (
                f", 95% interval {_fmt(extra[0])} to {_fmt(extra[1])} over {self.repetitions} repetitions)"
                if extra else ")")  # fmt: skip
        verdict = "meets" if self.passed else "fails"
        return (
            f"{c.measure} [{self.subset}] {c.statistic}: {figure} {verdict} '{words} {_fmt(self.threshold)}'{named}: "
            f"{self.test()}" + (f"; {self.note}" if self.note else "") + (f"; source: {c.source}" if c.source else "")
        )

    def row(self) -> dict[str, Any]:
        """The policy table's row: the criterion, the figure with its own interval and unit, the reference with
        its own interval, the test of the two, the verdict and the source."""
        c = self.criterion
        span = self.figure_interval
        return {
            "criterion": f"{c.measure} [{self.subset}] {c.statistic}",
            "figure": self.shown_figure,
            "95% interval": f"{_fmt(span[0])} to {_fmt(span[1])}" if span else "n/a",
            "unit": self.unit,
            "reference": self.reference_text(),
            "reference 95% interval": self.reference_interval_text(),
            "test": self.test(),
            "verdict": self.verdict_word(),
            "source": c.source or self.note,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (one entry of ``private/policy.json``'s ``judgements``): the row, then the numbers."""

        def pair(interval: tuple[float, float] | None) -> list[float] | None:
            return None if interval is None else [float(interval[0]), float(interval[1])]

        return {
            **self.row(), "statistic": self.criterion.statistic, "judged_value": self.figure,
            "judged_interval": pair(self.interval), "figure_interval": pair(self.figure_interval),
            "threshold_value": self.threshold, "reference_interval_values": pair(self.reference_range),
            "repetitions": self.repetitions, "difference": self.difference,
            "difference_interval": pair(self.difference_interval), "welch_df": self.df, "passed": self.passed,
        }  # fmt: skip

    def __repr__(self) -> str:
        c = self.criterion
        words = "at most" if c.direction == "at_most" else "at least"
        threshold = f", {words} {self.reference_text()}" if self.threshold is not None else ""
        return (f"<Judgement {c.measure} [{self.subset}] {c.statistic}: figure {_fmt(self.shown_figure)}{threshold}: "
                f"{self.verdict_word()}>")  # fmt: skip


@dataclass
class Verdict:
    """A policy applied to one release: every criterion's judgement, and the setting it was released under.

    Attributes
    ----------
    policy, judgements
        The policy and one judgement per (criterion, subset).
    setting
        The no-refit setting the release was drawn under (empty: the run's settings).
    reported, not_applicable
        The measures reported without a criterion; the criteria whose measure the release has not got.
    evaluation
        True for :func:`bayessdc.evaluate`'s verdict on files made elsewhere: it judges, it releases nothing.
    lever_costs
        What each lever the pipeline applied to this release cost in utility (:class:`bayessdc.levers.LeverCost`:
        the removal of replicated uniques, the setting, differential smoothing), each utility figure before and
        after; empty when no lever was applied. Shown in the report and the HTML display, written to
        ``private/policy.json`` (``lever_costs``).
    """

    policy: Policy
    judgements: list[Judgement]
    setting: dict[str, Any] = field(default_factory=dict)
    reported: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)
    evaluation: bool = False
    lever_costs: list[LeverCost] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether no criterion failed."""
        return not self.failed()

    def failed(self) -> list[Judgement]:
        """The judgements that failed."""
        return [j for j in self.judgements if j.passed is False]

    def setting_text(self) -> str:
        """The setting in words (``conditioning = pattern``), or ``the run's settings``."""
        return ", ".join(f"{k} = {v}" for k, v in self.setting.items()) or "the run's settings"

    def sentence(self) -> str:
        """The verdict in one sentence."""
        judged = [j for j in self.judgements if j.passed is not None]
        if self.evaluation:
            if not judged:
                outcome = "no criterion of it applies to the files evaluated; their figures are reported, not judged"
            elif self.passed:
                outcome = f"MET: {len(judged)} of {len(judged)} criteria judged pass for the files evaluated"
            else:
                outcome = f"FAILED: {len(self.failed())} of {len(judged)} criteria judged fail for the files evaluated"
            return (f"Disclosure policy {self.policy.name!r} {outcome} (an evaluation releases nothing: its outputs "
                    "are in private/).")  # fmt: skip
        if not judged:
            return (
                f"Disclosure policy {self.policy.name!r}: no criterion of it applies to this release; its figures are "
                "reported, not judged."
            )
        if self.passed:
            return (
                f"Disclosure policy {self.policy.name!r} MET: {len(judged)} of {len(judged)} criteria judged pass"
                + (f" (released with {self.setting_text()})" if self.setting else "") + "."
            )
        return (
            f"Disclosure policy {self.policy.name!r} FAILED: {len(self.failed())} of {len(judged)} criteria judged "
            "fail; nothing was released."
        )

    def table_caption(self) -> str:
        """The caption of :meth:`table`: the policy's name and digest and how to read the columns."""
        return f"Policy {self.policy.name!r} (sha256:{self.policy.digest[:16]}...): {POLICY_TABLE_CAPTION}"

    def table(self) -> pd.DataFrame:
        """One row per judgement (:meth:`Judgement.row`): ``criterion``, ``figure`` (pooled, never negative for a
        rate or a count), ``95% interval`` (the figure's own), ``unit``, ``reference`` (name and value, or the fixed
        threshold), ``reference 95% interval``, ``test`` (the difference and its Welch interval, or the end judged
        against the number), ``verdict``, ``source``."""
        import pandas as pd

        return pd.DataFrame([j.row() for j in self.judgements], columns=TABLE_COLUMNS)

    def __repr__(self) -> str:
        from .display import shorten

        return f"<Verdict: {shorten(self.sentence(), 280)}>"

    def _repr_html_(self) -> str:
        """The verdict sentence and the policy's table, each row's verdict coloured as the report colours it
        (Jupyter shows it; :func:`bayessdc.display.verdict_html`)."""
        from .display import verdict_html

        return verdict_html(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``private/policy.json``)."""
        return {
            "policy": self.policy.describe(),
            "passed": self.passed,
            "setting": self.setting,
            "verdict": self.sentence(),
            "judgements": [j.to_dict() for j in self.judgements],
            "reported_not_judged": self.reported,
            "not_applicable": self.not_applicable,
            "evaluation": self.evaluation,
            "lever_costs": [cost.to_dict() for cost in self.lever_costs],
        }


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value)}"
    return f"{value:.4g}"


# ----------------------------------------------------------------------------------------------------
# Reading a policy


def default_policy() -> Policy:
    """bayessdc's built-in policy (``bayessdc policy`` prints its file)."""
    text = default_policy_text()
    return _parse(text, "the built-in policy", builtin=True)


def default_policy_text() -> str:
    """The built-in policy file's text."""
    return resources.files("bayessdc").joinpath("policies/default.toml").read_text(encoding="utf-8")


def load_policy(policy: Policy | str | os.PathLike[str] | None) -> Policy:
    """A policy from a file path (TOML), or the built-in one for ``None``.

    Raises
    ------
    bayessdc.InputError
        A missing or malformed file, or one naming an unknown measure, subset kind, statistic or reference; the
        message names the line and the accepted names.
    """
    if policy is None:
        return default_policy()
    if isinstance(policy, Policy):
        return policy
    path = Path(policy)
    if not path.is_file():
        raise InputError(f"policy file {str(path)!r} does not exist")
    return _parse(path.read_text(encoding="utf-8"), str(path), path=str(path))


_CRITERION_KEYS = {"measure", "subset", "statistic", "at_most", "at_least", "source", "applies_to", "name"}
_SYNTHESIZERS = ("flows", "spatial", "dpmpm", "dp_areal", "cart", "cta", "suppress")


def _parse(text: str, where: str, *, path: str | None = None, builtin: bool = False) -> Policy:
    from bayessdc.measures import registry

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"policy {where}: not valid TOML: {err}") from err
    lines = text.splitlines()
    measures = registry()

    def fail(message: str, table: str, index: int, key: str | None = None) -> InputError:
        line = _line_of(lines, table, index, key)
        return InputError(f"policy {where}, line {line}: {message}")

    unknown_top = sorted(set(data) - {"policy", "criterion", "reported"})
    if unknown_top:
        raise InputError(
            f"policy {where}: unknown table(s) {', '.join(unknown_top)}; a policy has [policy], [[criterion]] and "
            "[[reported]]"
        )
    head = data.get("policy", {})
    if not isinstance(head, dict) or not isinstance(head.get("name", ""), str) or not head.get("name"):
        raise InputError(f"policy {where}: [policy] needs a name, for example name = \"agency-2027\"")
    criteria = []
    for i, entry in enumerate(data.get("criterion", [])):
        extra = sorted(set(entry) - _CRITERION_KEYS)
        if extra:
            raise fail(f"unknown key(s) {', '.join(extra)}; accepted: {', '.join(sorted(_CRITERION_KEYS))}",
                       "criterion", i, extra[0])  # fmt: skip
        name = entry.get("measure")
        if name not in measures:
            raise fail(f"unknown measure {name!r}; accepted: {', '.join(measures)}", "criterion", i, "measure")
        statistic = entry.get("statistic", "pooled")
        if statistic not in STATISTICS:
            raise fail(f"unknown statistic {statistic!r}; accepted: {', '.join(STATISTICS)}", "criterion", i,
                       "statistic")  # fmt: skip
        if ("at_most" in entry) == ("at_least" in entry):
            raise fail("give exactly one threshold, at_most or at_least", "criterion", i)
        direction = "at_most" if "at_most" in entry else "at_least"
        threshold = entry[direction]
        references = measures[name].references
        if isinstance(threshold, bool) or not isinstance(threshold, int | float | str):
            raise fail(f"{direction} must be a number or a reference name", "criterion", i, direction)
        if isinstance(threshold, str) and threshold not in references:
            accepted = ", ".join(references) or "none: give a number"
            raise fail(f"{name} has no reference {threshold!r}; its references: {accepted}", "criterion", i, direction)
        if isinstance(threshold, int | float) and not math.isfinite(threshold):
            raise fail(f"{direction} must be finite", "criterion", i, direction)
        subset = entry.get("subset", "*")
        if not isinstance(subset, str) or not subset:
            raise fail(f"subset must be '*' or a subset of {name}: {measures[name].subsets}", "criterion", i, "subset")
        names = measures[name].subset_names
        if subset != "*" and names is not None and subset not in names:
            raise fail(f"{name} has no subset {subset!r}; its subsets: {', '.join(map(repr, names))} or '*'",
                       "criterion", i, "subset")  # fmt: skip
        applies = entry.get("applies_to", [])
        if isinstance(applies, str):
            applies = [applies]
        bad = [s for s in applies if s not in _SYNTHESIZERS]
        if bad:
            raise fail(f"unknown synthesizer(s) {', '.join(map(str, bad))}; accepted: {', '.join(_SYNTHESIZERS)}",
                       "criterion", i, "applies_to")  # fmt: skip
        criteria.append(Criterion(
            measure=name, statistic=statistic, subset=subset,
            at_most=threshold if direction == "at_most" else None,
            at_least=threshold if direction == "at_least" else None,
            source=str(entry.get("source", "")), applies_to=tuple(applies), name=str(entry.get("name", "")),
        ))  # fmt: skip
    reported = {}
    for i, entry in enumerate(data.get("reported", [])):
        name = entry.get("measure")
        if name not in measures:
            raise fail(f"unknown measure {name!r}; accepted: {', '.join(measures)}", "reported", i, "measure")
        reported[name] = str(entry.get("why", ""))
    return Policy(
        name=head["name"], criteria=tuple(criteria), reported=reported, description=str(head.get("description", "")),
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(), path=path, builtin=builtin,
    )  # fmt: skip


def _line_of(lines: list[str], table: str, index: int, key: str | None) -> int:
    """The 1-based line of ``key`` in the ``index``-th ``[[table]]`` (or of the table's header)."""
    header = re.compile(rf"^\s*\[\[\s*{re.escape(table)}\s*\]\]")
    starts = [n for n, line in enumerate(lines) if header.match(line)]
    if index >= len(starts):
        return 1
    start = starts[index]
    end = next((n for n in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[n])), len(lines))
    if key is not None:
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for n in range(start + 1, end):
            if pattern.match(lines[n]):
                return n + 1
    return start + 1


# ----------------------------------------------------------------------------------------------------
# Judging


def _against_reference(
    row: Any, statistic: str, error: tuple[float, int], name: str
) -> tuple[float, tuple[float, float], str, float]:
    """The end of the release's 95% interval that allows for the Monte Carlo error of a reference as well as
    its own: Welch's interval of the difference ``pooled - reference`` (Welch 1947; Satterthwaite 1946), shifted
    by the reference, so that ``lower <= reference`` exactly when the difference's interval reaches 0; with the
    interval and the note, its degrees of freedom (the difference's interval is the shifted one less the reference).

    A reference such as Hu & Savitsky's inherent maximum is itself the mean of S simulated repetitions: with S =
    5 its mean of a rate a few records make moves by a record's worth from one stream to the next, and a release
    judged against the mean alone is refused or passed by that noise (measured on 200 records: one record matched
    in each of 3 datasets against 0.67 a repetition was refused with a zero-width interval)."""
    se_release = float(row["mc_se"]) if math.isfinite(float(row["mc_se"])) else 0.0
    datasets = int(row["datasets"])
    se_reference, repetitions = error
    se = math.hypot(se_release, se_reference)
    pooled = float(row["pooled"])
    if se == 0.0:
        return pooled, (pooled, pooled), "", math.inf
    from bayessdc.measures.base import t95

    parts = (se_release**4 / (datasets - 1) if datasets > 1 and se_release > 0 else 0.0) + (
        se_reference**4 / (repetitions - 1)
    )
    df = se**4 / parts if parts > 0 else math.inf
    half = t95(df) * se
    interval = (pooled - half, pooled + half)
    note = (
        f"the interval allows for the Monte Carlo error of both the release's {datasets} datasets and {name}'s "
        f"{repetitions} repetitions (Welch, {df:.1f} degrees of freedom)"
    )
    return (interval[0] if statistic == "lower" else interval[1]), interval, note, df


#: The two ends of Hu & Savitsky's inherent pair (Section 4.1).
INHERENT_ENDS = ("inherent_min", "inherent_max")


def _bounding_end(result: Any, subset: str, threshold: float | str, direction: str) -> tuple[float | str, str]:
    """The end of the inherent pair a criterion is judged against, and why when it is not the one stated.

    The pair is not ordered for every figure (:mod:`bayessdc.risk.identification`, "Which figures the pair
    bounds": the true match rate's minimum, labels drawn uniformly at random, can exceed its maximum). Where it is
    crossed for ``subset``, a criterion stated against one end is judged against the less strict of the two: a
    release is never refused for a figure that labels drawn at random (a release that learned nothing of the
    records) would give, nor passed against a threshold stricter than what chance gives. Any other threshold, or
    an ordered pair, is returned as stated with no reason."""
    from bayessdc.measures.identification import inherent_crossed

    if threshold not in INHERENT_ENDS or not inherent_crossed(result, subset):
        return threshold, ""
    ends = {end: result.reference(subset, end) for end in INHERENT_ENDS}
    loose = (max if direction == "at_most" else min)(ends, key=ends.__getitem__)  # the larger or smaller value
    if loose == threshold:
        return threshold, ""
    low, high = ends["inherent_min"], ends["inherent_max"]
    side = "above" if low > high else "below"
    return loose, (f"the inherent pair is crossed for this subset (minimum {_fmt(low)} {side} maximum {_fmt(high)}: "
                   f"not a bound of this figure), so it is judged against the {loose.replace('_', ' ')}, the less "
                   "strict end")  # fmt: skip


def judge(policy: Policy, measures: Any, synthesizer: str, setting: dict[str, Any] | None = None) -> Verdict:
    """Apply ``policy`` to a release's measures (:class:`bayessdc.measures.MeasureSet`).

    Parameters
    ----------
    policy
        The policy.
    measures
        The release's measures by name.
    synthesizer
        The synthesizer's short name (for ``applies_to``).
    setting
        The lever setting the measures were computed under, recorded in the verdict.

    Returns
    -------
    Verdict
        One judgement per (criterion, subset); a subset the measure has not got, or a figure or reference that
        is undefined, is ``not judged`` with the reason (never passed); a criterion whose measure the release
        has not got at all is listed in ``not_applicable``.
    """
    judgements: list[Judgement] = []
    not_applicable: list[str] = []
    for criterion in policy.criteria:
        if criterion.applies_to and synthesizer not in criterion.applies_to:
            continue
        result = measures.get(criterion.measure) if hasattr(measures, "get") else None
        if result is None:
            not_applicable.append(f"{criterion.label()} (a {synthesizer} release has no {criterion.measure})")
            continue
        subsets = result.subsets() if criterion.subset == "*" else [criterion.subset]
        summary = result.summary().set_index("subset")
        for subset in subsets:
            if subset not in summary.index:
                judgements.append(Judgement(criterion, subset, None, None, None, "", None,
                                            f"{criterion.measure} has no subset {subset!r}; it has "
                                            f"{', '.join(result.subsets())}"))  # fmt: skip
                continue
            row = summary.loc[subset]
            figure = float(row[criterion.statistic])
            interval = (float(row["lower"]), float(row["upper"])) if math.isfinite(float(row["mc_se"])) else None
            values = result.values.loc[result.values["subset"].astype(str) == subset, "value"].astype(float)
            shown = {"unit": result.unit, "pooled": float(row["pooled"]), "pooled_interval": interval,
                     "nonnegative": result.kind == "risk" and bool((values[values.notna()] >= 0).all())}  # fmt: skip
            threshold, crossed = _bounding_end(result, subset, criterion.threshold, criterion.direction)
            if isinstance(threshold, str):
                value = result.reference(subset, threshold)
                name = threshold
            else:
                value, name = float(threshold), _fmt(float(threshold))
            if value is None or not math.isfinite(value) or not math.isfinite(figure):
                judgements.append(Judgement(criterion, subset, figure, interval, value, name, None,
                                            "the figure or its reference is undefined", **shown))  # fmt: skip
                continue
            error = result.reference_error(subset, threshold) if isinstance(threshold, str) else None
            if error is not None:
                from bayessdc.measures.base import t95

                half = t95(error[1] - 1) * error[0]
                shown.update(reference_interval=(value - half, value + half), repetitions=error[1])
            note = ""
            if error is not None and criterion.statistic in ("lower", "upper"):
                figure, interval, note, df = _against_reference(row, criterion.statistic, error, name)
                difference = float(row["pooled"]) - value
                shown.update(difference=difference, difference_interval=(interval[0] - value, interval[1] - value),
                             df=df)  # fmt: skip
            passed = figure <= value if criterion.direction == "at_most" else figure >= value
            note = "; ".join(n for n in (crossed, note) if n)
            judgements.append(Judgement(criterion, subset, figure, interval, value, name, passed, note, **shown))
    judged = {c.measure for c in policy.criteria}
    reported = [name for name in measures if name not in judged]
    return Verdict(policy, judgements, dict(setting or {}), reported, not_applicable)
