"""The Release object: m synthetic datasets and the figures a review board reads, in memory.

:func:`bayessdc.synthesize` returns a :class:`Release`; :meth:`Release.save` writes the two-part output
folder (``release/`` may be published, ``private/`` never). Nothing confidential is reachable from the
public parts: ``synthetic`` and ``description`` are what ``release/`` receives; everything else (the
diagnostics with the posterior, risk, utility, per-record tables) is written to ``private/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import arviz as az
import pandas as pd

from bayessdc.synthesis.output import OutputFolder, json_writer, table_writer

from .errors import NotApplicableError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Diagnostics", "Measures", "PosteriorFiles", "Release"]


class PosteriorFiles(Mapping[str, az.InferenceData]):
    """Posteriors stored one netCDF file per fit, opened when asked for (a national flow run has thousands).

    The files are classic netCDF written by :func:`bayessdc.synthesis.output.write_inference_data`.

    Parameters
    ----------
    folder
        Where the files are.
    names
        The fits' names; fit ``name`` is in ``<folder>/<name>.posterior.nc``.
    keep_alive
        The temporary folder object that ``folder`` lives in, when the run had no output folder.
    """

    def __init__(self, folder: Path, names: list[str], keep_alive: Any = None) -> None:
        self.folder = Path(folder)
        self.names = list(names)
        #: A temporary folder holding the files, removed when the last reference to this mapping goes.
        self.keep_alive = keep_alive

    def path(self, name: str) -> Path:
        """The file of fit ``name``."""
        return self.folder / f"{name}.posterior.nc"

    def __getitem__(self, name: str) -> az.InferenceData:
        if name not in self.names:
            raise KeyError(name)
        from bayessdc.synthesis.output import read_inference_data

        return read_inference_data(self.path(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class Diagnostics:
    """The posterior of every fit and the gate's verdict (changed only by :func:`dataclasses.replace`).

    Attributes
    ----------
    posteriors
        ArviZ InferenceData per fit (one fit ``"all"``, or one per group such as a flow state pair).
    summary
        The figures written to ``private/diagnostics.json`` (r_hat, ESS, divergences, the gate's criteria
        and verdict, per-fit details).
    passed
        Whether the gate passed.
    allow_unconverged
        Whether the release was written although the gate failed.
    """

    posteriors: Mapping[str, az.InferenceData]
    summary: dict[str, Any]
    passed: bool
    allow_unconverged: bool = False

    @property
    def verdict(self) -> str:
        """The gate's verdict in words."""
        if self.passed:
            return "passed"
        if self.allow_unconverged:
            return "FAILED (released because allow_unconverged=True was given)"
        return "FAILED"

    def __getitem__(self, key: str) -> Any:
        return self.summary[key]


class Measures:
    """Risk and utility of a release recomputed with other options (the confidential data stays in memory).

    A synthesizer's pipeline subclasses it when its measures take options (for example the intruder's
    knowledge sets); the base class takes none.
    """

    risk_options: tuple[str, ...] = ()
    utility_options: tuple[str, ...] = ()

    def measure_input(self, **options: Any) -> Any:
        """What the measures (:mod:`bayessdc.measures`) read with ``options``: a
        :class:`bayessdc.measures.MeasureInput`."""
        raise NotImplementedError

    def replace_synthetic(self, synthetic: Any) -> None:
        """Measure ``synthetic`` from now on (the release's datasets after rows were removed from them)."""


@dataclass(frozen=True)
class Release:
    """m synthetic datasets with their diagnostics, risk and utility.

    Attributes
    ----------
    synthesizer
        The synthesizer's short name (``flows``, ``spatial``, ``dpmpm``, ``dp_areal``, ``cart``).
    synthetic
        All m datasets, a first column ``synthetic`` = 1..m (what ``release/synthetic.parquet`` holds).
    description
        The public description of the model (``release/model.json``): structure, priors, settings, m, seed;
        never an estimate.
    diagnostics
        The posterior per fit and the gate's verdict.
    identity
        What defines the run (input fingerprint, settings, seed): an output folder holding another run is
        refused.
    m, seed
        Number of datasets and the run's seed.
    seconds
        Wall time of the run.
    facts
        Figures a summary or report shows besides risk and utility (records, cells, groups, ...).
    private_json, private_tables, private_files
        Further private outputs: JSON payloads, tables (Parquet) and writers ``write(path)`` of other files,
        by file name under ``private/``.
    report_content
        The synthesizer's material for :meth:`report` (a :class:`bayessdc.report.ReportContent`; it holds the
        confidential values compared, in memory only).
    measure_input
        What the generic measures read (:class:`bayessdc.measures.MeasureInput`; confidential, in memory only).
    measured
        Every measure that applies to this release (:class:`bayessdc.measures.MeasureSet`), written to
        ``private/measures.json``; :meth:`measure_table` summarises it.
    policy
        The disclosure policy's verdict (:class:`bayessdc.policy.Verdict`): every criterion with its figure,
        interval, threshold and verdict, and the setting the release was drawn under
        (``private/policy.json``; the policy's name, digest and criteria are in ``release/model.json``).
    policy_tried
        The verdicts of every setting the pipeline drew the release under, in order (the last is :attr:`policy`).
    loaded_from
        The run folder :func:`bayessdc.load` read this release from (``None``: made in this session).
    """

    synthesizer: str
    synthetic: pd.DataFrame
    description: dict[str, Any]
    diagnostics: Diagnostics
    identity: dict[str, Any]
    m: int
    seed: int
    seconds: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)
    private_json: dict[str, dict[str, Any]] = field(default_factory=dict)
    private_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    private_files: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    measures: Measures | None = field(default=None, repr=False)
    report_content: Any = field(default=None, repr=False)
    measure_input: Any = field(default=None, repr=False)
    measured: Any = field(default=None, repr=False)
    policy: Any = field(default=None, repr=False)
    policy_tried: list[Any] = field(default_factory=list, repr=False)
    loaded_from: Path | None = None

    # -- the verbs ----------------------------------------------------------------------------------

    def risk(self, **options: Any) -> pd.DataFrame:
        """Every disclosure-risk measure of this release, one row per (measure, subset), the same columns for
        every synthesizer (see :meth:`measure_table`); with ``options`` (for example
        ``known=[["gender", "county"]]``) recomputed from the records held in memory.

        Raises
        ------
        NotApplicableError
            When the synthesizer takes no such option (the message names the ones it takes).

        Examples
        --------
        >>> import bayessdc as bsd
        >>> from bayessdc.models.cart import simulate_acs_persons
        >>> release = bsd.synthesize(simulate_acs_persons(200, seed=1), bsd.CART(bootstrap=10),
        ...                          synthesize="education", keep="age,sex", m=2, progress=False)
        >>> sorted(release.risk()["measure"].unique())  # records copied and removed; Hu & Savitsky's figures
        ['attribute_disclosures', 'copied_records', 'expected_match_risk', 'false_match_rate', 'released_records',
         'removed_records', 'replicated_uniques', 'true_match_rate']
        >>> risk = release.risk(known=[["age", "sex", "education"]])  # recomputed for an intruder knowing these
        >>> list(risk["measure"].unique())[:4]
        ['expected_match_risk', 'true_match_rate', 'false_match_rate', 'attribute_disclosures']
        >>> row = risk.set_index(["measure", "subset"]).loc[("expected_match_risk", "age+sex+education")]
        >>> bool(row["inherent_min"] < row["pooled"] < row["inherent_max"])  # between Hu & Savitsky's bounds
        True
        """
        return self._table("risk", options)

    def utility(self, **options: Any) -> pd.DataFrame:
        """Every utility measure of this release, in the shape of :meth:`risk`; with ``options`` recomputed."""
        return self._table("utility", options)

    def _table(self, kind: str, options: dict[str, Any]) -> pd.DataFrame:
        if not options:
            return self.measure_table(kind)
        if self.loaded_from is not None:
            raise NotApplicableError(
                f"this release was loaded from {self.loaded_from}, which holds no confidential records: {kind}() "
                "with options recomputes from them, in the session that made the release. The saved figures are "
                f"{kind}() without arguments."
            )
        allowed = getattr(self.measures, f"{kind}_options", ()) if self.measures is not None else ()
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            takes = f"takes {', '.join(allowed)}" if allowed else "takes no options"
            raise NotApplicableError(
                f"{self.synthesizer} {kind}() {takes}; got {', '.join(unknown)}. The figures computed with the "
                f"run's own options are {kind}() without arguments."
            )
        from bayessdc.measures import compute_measures

        return compute_measures(self.measures.measure_input(**options), kind=kind).summary(kind)

    def measure_table(self, kind: str | None = None) -> pd.DataFrame:
        """Every measure of this release, one row per (measure, subset), the same columns for every synthesizer.

        Parameters
        ----------
        kind
            ``"risk"`` or ``"utility"`` for one kind only; ``None`` for all.

        Returns
        -------
        pandas.DataFrame
            ``measure``, ``kind``, ``subset``, ``datasets``, ``pooled`` (the mean over the m datasets),
            ``mc_se`` (its Monte Carlo standard error), ``lower`` and ``upper`` (its 95% interval), ``worst``
            (the worst dataset), then one column per reference (``inherent_min``, ``inherent_max``,
            ``held_out`` ...), empty where a measure has no such reference.
        """
        from bayessdc.measures import MeasureSet

        return (self.measured or MeasureSet([])).summary(kind)

    def policy_record(self) -> dict[str, Any]:
        """What ``private/policy.json`` holds: the verdict, and every setting tried before it (``tried``)."""
        record = self.policy.to_dict()
        record["tried"] = [v.to_dict() for v in self.policy_tried[:-1]] if len(self.policy_tried) > 1 else []
        return record

    def judge(self, policy: Any = None) -> Any:
        """This release's measures judged by another ``policy`` (a file, a :class:`bayessdc.Policy`, or ``None``
        for the default), without changing what was released: a :class:`bayessdc.policy.Verdict`.

        Examples
        --------
        >>> import bayessdc as bsd
        >>> release = bsd.synthesize(bsd.examples.acs_persons(300, seed=1), bsd.CART(bootstrap=10),
        ...                          synthesize="education", keep="age,sex", m=2, progress=False)
        >>> none_copied = bsd.Policy(name="no copies", criteria=(
        ...     bsd.Criterion("copied_records", statistic="worst", at_most=0),))
        >>> verdict = release.judge(none_copied)
        >>> verdict.passed, verdict.failed()[0].criterion.measure
        (False, 'copied_records')
        """
        from bayessdc.measures import MeasureSet
        from bayessdc.policy import judge, load_policy

        return judge(load_policy(policy), self.measured or MeasureSet([]), self.synthesizer)

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the run's report: one self-contained HTML file a disclosure review board reads.

        It states what was synthesized and how and the gate's verdict, shows the posterior diagnostics, the
        original against the synthetic data, the risk figures beside their reference points, the utility
        figures and a risk-utility plot. It shows the confidential data's distributions: keep it private
        (:meth:`save` writes it to ``private/report.html``).

        Parameters
        ----------
        path
            The HTML file to write.

        Returns
        -------
        pathlib.Path
            ``path``.
        """
        from bayessdc.report import write_run_report

        return write_run_report(self, path)

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write ``out/release`` (synthetic data and model description) and ``out/private`` (the rest).

        ``private/`` is written first; ``release/`` is then built whole and renamed into place in one step,
        so it is either absent or complete. A folder holding another run is refused
        (:class:`bayessdc.RunMismatchError`); the same run's folder is completed.

        Parameters
        ----------
        out
            The output folder.

        Returns
        -------
        pathlib.Path
            ``out``.
        """
        with OutputFolder(out, self.identity) as folder:
            self.write_to(folder)
        return Path(out)

    def write_to(self, folder: OutputFolder, written: set[str] | frozenset[str] = frozenset()) -> None:
        """Write this release into an open output folder: ``private/`` first, then ``release/`` in one rename.

        Parameters
        ----------
        folder
            The open output folder (its identity must be this release's).
        written
            Names of ``private_files`` already written to this folder during the run (not written again).
        """
        self.write_private(folder, skip=written)
        folder.write_release(
            {"model.json": json_writer(self.description), "synthetic.parquet": table_writer(self.synthetic)}
        )

    def write_private(self, folder: OutputFolder, skip: set[str] | frozenset[str] = frozenset()) -> None:
        """Write everything of ``private/`` into ``folder`` (the posteriors, diagnostics, risk, utility)."""
        posteriors = self.diagnostics.posteriors
        if isinstance(posteriors, PosteriorFiles):
            target = folder.private / "groups"
            if posteriors.folder.resolve() != target.resolve():
                shutil.copytree(posteriors.folder, target, dirs_exist_ok=True)
        folder.write_private_json("diagnostics.json", self.diagnostics.summary)
        folder.write_private_json("release.json", {
            "synthesizer": self.synthesizer, "m": self.m, "seed": self.seed, "seconds": float(self.seconds),
            "facts": self.facts,
        })  # what bsd.load reads back besides the files of its own  # fmt: skip
        for name, write in self.private_files.items():
            if name not in skip:
                folder.write_private_file(name, write)
        for name, table in self.private_tables.items():
            folder.write_private_table(name, table)
        for name, payload in self.private_json.items():
            folder.write_private_json(name, payload)
        if self.measured is not None:  # measures.json, risk.json and utility.json: one writer for every release
            from bayessdc.measures.files import measure_files

            for name, payload in measure_files(self.measured).items():
                folder.write_private_json(name, payload)
        if self.policy is not None:
            folder.write_private_json("policy.json", self.policy_record())
        self._write_report(folder)

    def _write_report(self, folder: OutputFolder) -> None:
        """``private/risk_utility.json`` (what ``bayessdc report`` compares across runs) and ``private/report.html``."""
        from bayessdc.report import FIGURES_FILE, render_run_report, run_figures
        from bayessdc.report.html import html_writer

        folder.write_private_json(FIGURES_FILE, run_figures(self).to_dict())
        folder.write_private_file("report.html", html_writer(lambda: render_run_report(self)))

    def plot(self, name: str) -> Figure:
        """One of the report's plots of this release, by name, as a matplotlib figure.

        Parameters
        ----------
        name
            ``columns`` (the released columns), ``compare:<column>`` (a synthesized column, original against
            synthetic), ``fits``, ``rank``, ``release_gate`` and ``importance`` (diagnostics, where the release has
            them), ``diagnostics:<k>`` and ``comparison:<k>`` (the synthesizer's own figures), a measure's name
            (every dataset beside its references), ``risk_utility`` (then ``risk_utility:2`` ...). The release's
            display in a notebook lists the names it has (:func:`bayessdc.display.plot_names`).

        Returns
        -------
        matplotlib.figure.Figure
            The figure as :meth:`report` draws it.

        Raises
        ------
        ValueError
            For a name this release has no plot of; the message lists the names it has.
        """
        from .display import release_plot

        return release_plot(self, name)

    def _repr_html_(self) -> str:
        """The synthesizer, m, the gate's and the policy's verdicts and the headline measures (Jupyter shows it;
        :func:`bayessdc.display.release_html`)."""
        from .display import release_html

        return release_html(self)

    def __repr__(self) -> str:
        return (
            f"<Release {self.synthesizer}: m = {self.m} synthetic datasets of {len(self.synthetic) // max(self.m, 1)} "
            f"rows, gate {self.diagnostics.verdict}>"
        )
