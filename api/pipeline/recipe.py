"""The contract between a synthesizer's recipe and the one pipeline of :func:`bayessdc.synthesize`.

A recipe (``bsd.Flows``, ``bsd.Spatial``, ``bsd.DPMPM``, ``bsd.DPAreal``, ``bsd.CART``) holds a synthesizer's
priors and settings and does three things, as SDV's ``_fit``/``_sample`` or a bambi backend do:

``prepare(frame, synthesize, keep, seed) -> Prepared``
    the validated, typed input of the model (a :class:`Prepared` subclass per synthesizer, never written by a
    later step); bad input raises :class:`bayessdc.InputError` naming the column, row or constraint, before any
    sampling;
``fit(prepared, m, seed, workdir, progress) -> Fitted``
    the posterior of every independent part and the gate's figures (the flows fan their group pairs out
    through the group runner here; CART, which has no posterior, fits its trees);
``describe(prepared, fitted) -> dict``
    the public description of the model (``release/model.json``: structure, priors, settings, never an
    estimate).

The pipeline then calls :meth:`Recipe.draw` for the m synthetic datasets as one release frame and what the
measures read (:class:`Drawn`), and builds the :class:`bayessdc.Release` once, for every synthesizer. The
default :meth:`Recipe.fit` and :meth:`Recipe.draw` serve any model that keeps the contract of
:mod:`bayessdc.models.base` (``fit``, ``convergence_quantities``, ``observed``, ``posterior_predictive``,
``describe``) and releases whole frames (``release_frame``): one posterior, the parameter gate on its
convergence quantities, and each of the m datasets from one posterior draw. A recipe overrides them where its
paper does more (the Dirichlet-process models' release gate and Bayesian risk, the flows' group pairs, the
spatial model's two stages) or has no posterior at all (CART: trees and a Bayesian bootstrap, an explicit
non-posterior path).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import arviz as az
import pandas as pd

from bayessdc.models.sampling import ConvergenceReport, check_convergence
from bayessdc.synthesis import streams
from bayessdc.synthesis.release_gate import ReleaseGateReport
from bayessdc.synthesis.streams import Stream

from ..release import Diagnostics, Measures
from ..validation import column_list

__all__ = ["Drawn", "Fitted", "Lever", "PosteriorFit", "Prepared", "Recipe", "column_list"]


@dataclass
class Prepared:
    """A recipe's validated input; each synthesizer's recipe subclasses it with typed fields of its own.

    Attributes
    ----------
    data
        The model input (what the synthesizer's ``fit`` takes).
    identity
        What defines the run besides m and seed (input fingerprint, columns, priors, settings).
    notices
        Messages for the user (dropped columns, groups released unchanged).
    weights, weight_role
        The survey weight column (``bsd.synthesize(..., weights=)``, set by the pipeline after :meth:`Recipe.prepare`)
        and its role, ``"kept"`` or ``"synthesized"`` (:mod:`bayessdc.pipeline.weighting`); ``None`` without
        weights. A recipe that takes weights (:attr:`Recipe.takes_weights`) computes its utility figures weighted.
    households
        The household id column when the records are persons within households (``bsd.CART(households=)``), whose
        survey weight is then the household's, the same for every member (``release/model.json`` and the report
        say so); ``None`` otherwise.
    """

    data: Any
    identity: dict[str, Any]
    notices: list[str] = field(default_factory=list)
    weights: str | None = None
    weight_role: str | None = None
    #: ``(design, columns)``: the replicate weights (``bsd.synthesize(..., replicate_weights=)``) and their values
    #: on the fitted rows, carried into every dataset beside the kept weights.
    replicates: Any = None
    households: str | None = None


@dataclass
class PosteriorFit:
    """The fit of one posterior-based model: its posterior and the model object that drew it."""

    idata: az.InferenceData
    synthesizer: Any


@dataclass
class Fitted:
    """The posterior of every part and the gate's figures.

    Attributes
    ----------
    diagnostics
        The posterior per fit and the summary written to ``private/diagnostics.json``.
    report
        The worst part's convergence report (what a refusal prints).
    what
        What did not converge, in words (``"the DPMPM posterior"``, ``"3 group(s) (A, B, C)"``).
    hint
        Advice printed with a refusal.
    state
        What the recipe's draw step reads: a :class:`PosteriorFit` (or a subclass) for one posterior, the group
        runner's results for the flows, the two stages of the spatial model, the trees of CART.
    reports
        The parameter gate's figures of every fit, by fit name (``report.to_dict()`` form); written to
        ``private/diagnostics.json`` under ``parameter_gate``, the one part of it every synthesizer shares.
    private_files
        Private files written whatever the verdict (for example a posterior summary).
    release_gate
        The release gate's report (:class:`~bayessdc.synthesis.release_gate.ReleaseGateReport`; written to
        ``private/diagnostics.json`` under ``release_gate``) when it, not the parameter gate, decides the release
        (the Dirichlet-process synthesizers).
    parameter_passed
        The parameter gate's verdict when the release gate decides (then only a diagnostic).
    failure, advice
        How a refusal words the failure and what to do (default: did not converge; sample longer).
    """

    diagnostics: Diagnostics
    report: ConvergenceReport | None
    what: str = "the posterior"
    hint: str = ""
    state: Any = None
    private_files: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    release_gate: ReleaseGateReport | None = None
    parameter_passed: bool | None = None
    failure: str = "did not converge"
    advice: str = ""


@dataclass
class Drawn:
    """The m synthetic datasets and what the measures read, as a recipe's draw step gives them.

    Attributes
    ----------
    synthetic
        All m datasets in one frame, a first column ``synthetic`` = 1..m (``release/synthetic.parquet``).
    measure_input
        What the generic measures read (:class:`bayessdc.measures.MeasureInput`; confidential, in memory).
    measures
        The release's measures with other options (``release.risk(known=...)``), when it takes any.
    facts
        Figures a summary or report shows besides the measures (records, cells, groups, ...).
    private_json, private_tables
        Further private outputs by file name under ``private/``.
    diagnostics
        How far the draw step's own approximations can be trusted (the importance sampling of the Bayesian attribute
        risk), added to the fit's diagnostics in the release (``private/diagnostics.json``).
    """

    synthetic: pd.DataFrame
    measure_input: Any = None
    measures: Measures | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    private_json: dict[str, dict[str, Any]] = field(default_factory=dict)
    private_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Lever:
    """A way to lower a synthesizer's disclosure risk, named in a refusal.

    Attributes
    ----------
    parameter
        The recipe's parameter (``conditioning``, ``gamma``, ``min_leaf``).
    advice
        What to do, in words.
    refit
        Whether it needs the model fitted again.
    """

    parameter: str
    advice: str
    refit: bool = True

    def sentence(self) -> str:
        """The lever in one phrase, for a refusal."""
        return f"{self.parameter}: {self.advice}" + ("" if self.refit else " (no refit: the same posterior)")


class Recipe(ABC):
    """A synthesizer's part of the pipeline (see the module docstring)."""

    #: Short name used in outputs and the command line.
    name: str = ""
    #: Synthetic datasets drawn when ``bsd.synthesize`` (and the command's ``--m``) is given none.
    default_m: ClassVar[int] = 5
    #: Whether the release is a table of records that a control set (``holdout=``) can be compared with.
    takes_control: ClassVar[bool] = True
    #: Whether the recipe takes survey weights (``weights=``): a table of records whose weight column it keeps or
    #: synthesizes, whose figures are weighted, and whose ``prepare`` takes ``weights=`` (the weight column, a
    #: design variable left out of its default tables and knowledge sets).
    takes_weights: ClassVar[bool] = False
    #: Reads only ``synthesize`` and ``keep`` (the rest dropped), or every column; what it reads is checked first.
    reads_roles_only: ClassVar[bool] = False

    @abstractmethod
    def prepare(
        self, frame: pd.DataFrame, synthesize: Sequence[str] | None, keep: Sequence[str] | None, seed: int = 0
    ) -> Prepared:
        """Validate ``frame`` and the column roles; nothing is sampled. ``seed`` is the run's seed, for any
        random step of the preparation (such as jittering shared locations)."""

    def synthesizer(self) -> Any:
        """The model object this recipe fits (the contract of ``bayessdc.models.base``), built from its
        priors and settings."""
        raise NotImplementedError(f"{type(self).__name__} has no single model object")

    def fit(self, prepared: Prepared, m: int, seed: int, workdir: Path | None, progress: bool) -> Fitted:
        """Fit every part; ``workdir`` (when given) stores finished parts so that a rerun resumes.

        By default: one posterior of :meth:`synthesizer` and the parameter gate on its
        ``convergence_quantities`` (state: :class:`PosteriorFit`); the posterior is written to
        ``private/posterior.nc``.
        """
        synthesizer = self.synthesizer()
        idata = synthesizer.fit(prepared.data, seed)
        report = check_convergence(
            idata, var_names=[], derived=synthesizer.convergence_quantities(idata, prepared.data)
        )
        return Fitted(
            Diagnostics({"all": idata}, report.to_dict(), passed=report.passed),
            report,
            state=PosteriorFit(idata, synthesizer),
            reports={"all": report.to_dict()},
            private_files={"posterior.nc": lambda path: idata.to_netcdf(str(path), engine="h5netcdf")},
        )

    def describe(self, prepared: Prepared, fitted: Fitted) -> dict[str, Any]:
        """The public description of the model (``release/model.json``); by default the fitted model's own
        ``describe()``."""
        return fitted.state.synthesizer.describe()

    def draw(self, prepared: Prepared, fitted: Fitted, m: int, seed: int, progress: bool) -> Drawn:
        """The m synthetic datasets and what the measures read.

        By default: each dataset from one posterior draw of the :class:`PosteriorFit`
        (:func:`bayessdc.synthesis.datasets.draw_synthetic`), released whole by the model's ``release_frame``
        and measured against the confidential values in the same frame.
        """
        from bayessdc.measures import MeasureInput
        from bayessdc.synthesis.datasets import draw_synthetic

        state: PosteriorFit = fitted.state
        synthesizer, data = state.synthesizer, prepared.data
        rng = streams.rng(seed, Stream.DATASETS)
        synthetic = synthesizer.release_frame(data, draw_synthetic(synthesizer, state.idata, data, m, rng))
        observed = synthesizer.observed(data).expand_dims(synthetic=[1])
        original = synthesizer.release_frame(data, observed).drop(columns="synthetic")
        released = [c for c in synthetic.columns if c != "synthetic"]
        return Drawn(
            synthetic,
            measure_input=MeasureInput(synthetic, original, released=released, seed=seed),
            facts={"records": len(original)},
        )

    def report_content(self, prepared: Prepared, release: Any) -> Any:
        """The synthesizer's material for the run's report (:class:`bayessdc.report.ReportContent`): what it
        did, the data to compare and diagnostics only its model has. Risk and utility are not here: the report
        lays them out from the release's measures. By default none."""
        from bayessdc.report import ReportContent

        return ReportContent()

    def kept_columns(self, keep: list[str]) -> list[str]:
        """The columns the recipe will keep, given ``keep=``: by default ``keep``; a recipe that keeps a column of its
        own (CART's ``strata=``, the column of areas) adds it, so that the survey weight's role
        (:func:`~bayessdc.pipeline.weighting.weight_roles`: kept in a partially synthetic release) sees it."""
        return keep

    def check_run(self, m: int, allow_unconverged: bool) -> None:  # noqa: B027 - optional hook, none by default
        """Refuse, before sampling, an ``m`` or settings the recipe cannot deliver (under ``allow_unconverged``)."""

    def levers(self) -> list[Lever]:
        """The synthesizer's privacy levers, in the order to try them (by default none)."""
        return []

    def no_refit_settings(self) -> list[dict[str, Any]]:
        """Other settings the release can be drawn under from the same posterior, in the order the pipeline
        tries them when the release fails its disclosure policy (by default none)."""
        return []

    def more_chains(
        self, prepared: Prepared, fitted: Fitted, chains: int, seed: int, workdir: Path | None, progress: bool
    ) -> Fitted | None:
        """``fitted`` with its chains brought to ``chains`` (the chains it has kept, the others fitted from their
        own streams) and gated again, for the release gate's stopping rule
        (:mod:`bayessdc.pipeline.stopping`); ``None`` (the default): this recipe cannot add chains to a fit."""
        return None

    def under(self, setting: dict[str, Any], fitted: Fitted) -> tuple[Recipe, Fitted]:
        """This recipe and its fit under ``setting`` (one of :meth:`no_refit_settings`): the same posterior,
        drawn and described by the pipeline's same steps."""
        raise NotImplementedError(f"{type(self).__name__} has no setting to draw under without a refit")
