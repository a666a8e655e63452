"""Synthetic data made elsewhere, judged by the same measures, policy and report as a bayessdc release.

:func:`evaluate` takes the confidential table and synthetic datasets made by any tool (synthpop, SDV, a
release of another agency) and computes every measure that needs no posterior: records copied and replicated
uniques, the identification risk and attribute disclosures of the synthesized categorical columns beside their
inherent bounds (partially synthetic data), tau of the analyst's tables, the pMSE and, with a control set, the
attack measures. It judges them by a disclosure policy and writes the same ``private/`` and report as
:func:`bayessdc.synthesize`, with the files judged in ``private/evaluated/`` and no ``release/`` (an evaluation
releases nothing), so that ``bayessdc report`` and :func:`bayessdc.compare_releases` put the files on
one risk-utility plot with bayessdc releases.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError
from .io import read_table
from .validation import check_values

__all__ = ["check_attack_settings", "decide_roles", "evaluate"]

_log = logging.getLogger("bayessdc.evaluation")

Frame = pd.DataFrame | str | os.PathLike[str]


def _frame(value: Frame, what: str) -> pd.DataFrame:
    if isinstance(value, pd.DataFrame):
        return value.reset_index(drop=True)
    if isinstance(value, str | os.PathLike):
        return read_table(value)
    raise InputError(f"{what} must be a data frame or a file, got {type(value).__name__}")


def stack_synthetic(synthetic: Frame | Sequence[Frame]) -> pd.DataFrame:
    """The synthetic datasets as one frame with a first column ``synthetic`` = 1..m.

    ``synthetic`` is one frame or file (with a ``synthetic`` column numbering its datasets, or without: one
    dataset), or a sequence of frames or files (one dataset each).
    """
    from bayessdc.synthesis.datasets import stack_datasets

    if isinstance(synthetic, pd.DataFrame | str | os.PathLike):
        frame = _frame(synthetic, "synthetic")
        if "synthetic" not in frame.columns:
            return stack_datasets([frame])
        _check_numbering(frame["synthetic"])
        codes, _ = pd.factorize(frame["synthetic"], sort=True)
        frame = frame.assign(synthetic=codes + 1).sort_values("synthetic", kind="stable").reset_index(drop=True)
        return frame[["synthetic", *[c for c in frame.columns if c != "synthetic"]]]
    frames = [_frame(f, f"synthetic dataset {k}") for k, f in enumerate(synthetic, start=1)]
    if not frames:
        raise InputError("synthetic= holds no dataset")
    return stack_datasets(frames)


def _check_numbering(numbers: pd.Series) -> None:
    """The ``synthetic`` column numbers the datasets: whole numbers, none missing (data rows named)."""
    from bayessdc.models.validation import name_rows

    values = pd.to_numeric(numbers, errors="coerce")
    bad = (values.isna() | (values != values.round())).to_numpy()
    if bad.any():
        raise InputError(
            f"column 'synthetic' numbers the synthetic datasets (1..m) but is missing or not a whole number at "
            f"{name_rows(bad)}; rename the column if it is data, or number every row's dataset"
        )


def _check_columns(original: pd.DataFrame, synthetic: pd.DataFrame, roles: dict[str, list[str]]) -> list[str]:
    """The released columns, checked: each in the original, with no level the original lacks."""
    released = [c for c in synthetic.columns if c != "synthetic"]
    unknown = [c for c in released if c not in original.columns]
    if unknown:
        raise InputError(f"synthetic column(s) {', '.join(map(repr, unknown))} are not columns of the original")
    for role, columns in roles.items():
        absent = [c for c in columns if c not in released]
        if absent:
            raise InputError(f"{role}= column(s) {', '.join(map(repr, absent))} are not in the synthetic data")
    for column in released:
        if pd.api.types.is_numeric_dtype(original[column]) and pd.api.types.is_numeric_dtype(synthetic[column]):
            continue
        levels = set(original[column].dropna().astype(str))
        new = sorted(set(synthetic[column].dropna().astype(str)) - levels)
        if new:
            raise InputError(
                f"synthetic column {column!r} has level(s) the original lacks: {', '.join(map(repr, new[:5]))}"
                f"{' ...' if len(new) > 5 else ''}"
            )
    return released


def _equal(mine: pd.Series, theirs: pd.Series) -> np.ndarray:
    """Row by row, whether two columns hold the same value (two missing values equal)."""
    a, b = mine.reset_index(drop=True), theirs.reset_index(drop=True)
    missing = (a.isna() & b.isna()).to_numpy()
    if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
        same = a.to_numpy(dtype=float, na_value=np.nan) == b.to_numpy(dtype=float, na_value=np.nan)
    else:
        same = (a.astype(str) == b.astype(str)).to_numpy() & ~a.isna().to_numpy() & ~b.isna().to_numpy()
    return same | missing


def _removed_rows(original: np.ndarray, dataset: np.ndarray) -> int:
    """-1 when ``dataset``'s rows are ``original``'s in order with some left out; else the first row (0-based)
    that is not (greedy matching, which finds such an order whenever there is one)."""
    i = 0
    for j, key in enumerate(dataset):
        while i < len(original) and original[i] != key:
            i += 1
        if i == len(original):
            return j
        i += 1
    return -1


def _differs(original: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str]) -> str:
    """Where the datasets are not the original's records on ``columns`` (``""``: every dataset is, record by
    record, or with rows removed and the rest in the original's order)."""
    from bayessdc.models.validation import name_rows
    from bayessdc.risk.copies import row_keys

    for number, dataset in synthetic.groupby("synthetic", sort=True):
        if len(dataset) > len(original):
            return f"dataset {number} has {len(dataset):,} rows, more than the original's {len(original):,}"
        if len(dataset) == len(original):
            for column in columns:
                same = _equal(dataset[column], original[column])
                if not same.all():
                    return f"{column!r} of dataset {number} differs from the original at {name_rows(~same)}"
            continue
        first = _removed_rows(*row_keys([original, dataset], columns))
        if first >= 0:
            return (f"dataset {number} has {len(original) - len(dataset):,} rows fewer than the original, and from "
                    f"data row {first + 1} on its rows are not the original's records in order")  # fmt: skip
    return ""


#: Why a partially synthetic file with rows removed gets no identification risk nor attribute disclosures.
ROW_ALIGNED = (
    "the identification risk and attribute disclosures (Hu & Savitsky) compare record i with row i of every dataset, "
    "and a removed record has no row: they are not computed; the attacks and the other measures are"
)


def decide_roles(
    original: pd.DataFrame, synthetic: pd.DataFrame, released: list[str], keep: list[str], synthesize: list[str]
) -> tuple[list[str], list[str]]:
    """The kept and the synthesized columns, decided from the data (partially synthetic: some columns kept).

    Every released column that is not kept is synthesized (``synthesize`` first, in its order): a column the
    other tool changed is a secret of the attacks whether or not ``synthesize`` names it.

    Kept columns are released unchanged: every dataset is the original record by record on them, or, where the
    tool removed rows (synthpop's ``sdc(rm.replicated.uniques = TRUE)``, bayessdc's removal of replicated
    uniques), the original's records in order with those rows left out. ``keep`` given is checked against that
    and refused where it does not hold. Without ``keep``, the kept columns are the released columns outside
    ``synthesize`` that hold it (none when every released column does: the files are the original itself,
    judged as fully synthetic data that copy it).

    Raises
    ------
    bayessdc.InputError
        ``keep`` columns that some dataset does not hold, naming the column or the dataset and the rows.
    """
    both = [c for c in keep if c in synthesize]
    if both:
        raise InputError(f"column(s) {', '.join(map(repr, both))} are given as both kept and synthesized")
    if keep:
        where = _differs(original, synthetic, keep)
        if where:
            raise InputError(
                f"keep= {', '.join(keep)}: {where}. A kept column is released unchanged, row i the original's "
                "record i (or rows removed, the rest in order). Leave the column out of keep= (give no keep= to "
                "judge the files as fully synthetic), or give the files the tool wrote in the original's order"
            )
        kept = list(keep)
    else:
        candidates = [c for c in released if c not in synthesize]
        kept = [c for c in candidates if not _differs(original, synthetic, [c])]
        if len(kept) == len(released) or (kept and _differs(original, synthetic, kept)):
            kept = []
    synthesized = [*synthesize, *(c for c in released if c not in kept and c not in synthesize)]
    return kept, synthesized


def check_attack_settings(attacks: Any, released: list[str]) -> Any:
    """The attack settings of ``attacks`` (settings, a preset's name or ``None``), their columns checked against
    the ``released`` ones.

    Raises
    ------
    bayessdc.InputError
        An unknown preset, or a secret, auxiliary or linkability column that is not released.
    """
    from bayessdc.measures.attacks import AttackSettings

    try:
        settings = AttackSettings.preset(attacks) if attacks is None or isinstance(attacks, str) else attacks
    except ValueError as error:
        raise InputError(f"attacks=: {error}") from None
    if not isinstance(settings, AttackSettings):
        raise InputError(f"attacks= must be AttackSettings or a preset's name, got {type(attacks).__name__}")
    for field, columns in (("secrets", settings.secrets), ("auxiliary", settings.auxiliary),
                           ("split", [c for source in settings.split or () for c in source])):  # fmt: skip
        absent = [c for c in columns if c not in released]
        if absent:
            raise InputError(f"attacks= {field} column(s) {', '.join(map(repr, absent))} are not released columns "
                             f"(the files hold {', '.join(released)})")  # fmt: skip
    return settings


def evaluate(
    original: Frame,
    synthetic: Frame | Sequence[Frame],
    *,
    synthesize: Sequence[str] | str | None = None,
    keep: Sequence[str] | str | None = None,
    holdout: Frame | None = None,
    known: Sequence[Sequence[str] | str] | None = None,
    tables: Sequence[Any] | None = None,
    bootstrap: int = 200,
    name: str = "external",
    policy: Any = None,
    out: str | os.PathLike[str] | None = None,
    seed: int = 0,
    progress: bool = True,
    attacks: Any = None,
) -> Any:
    """Judge synthetic data made elsewhere by bayessdc's measures, a disclosure policy and its report.

    Parameters
    ----------
    original
        The confidential table (a frame or a file).
    synthetic
        The synthetic datasets: one frame or file (a ``synthetic`` column numbering the m datasets, or one
        dataset without it) or a sequence of frames or files, one per dataset.
    synthesize, keep
        The columns the other tool synthesized and those it released unchanged. Partially or fully synthetic is
        decided from the data (:func:`decide_roles`): a kept column is the original's record by record in every
        dataset; ``keep`` is checked against it and refused where it does not hold; without ``keep``, the
        released columns outside ``synthesize`` that are the original's record by record are the kept ones. Every
        other released column is synthesized. Partially synthetic data get the identification risk and
        attribute disclosures of the synthesized columns beside their inherent bounds (a numeric column matched
        to its decile band), and every synthesized column, numeric ones included, is a secret of the attacks.
    holdout
        A control set (real records of the same population the other tool never saw): the attack measures and
        the records-copied reference use it. Refused when it repeats training records.
    known
        The intruder's knowledge sets for the identification risk (default: every kept and categorical
        synthesized column).
    tables
        The analyst's count tables (``"A,B"`` strings; default: each synthesized column by each kept column).
    bootstrap
        Bootstrap replicates of the original per table.
    name
        The name of the method, as the report and the comparison plot show it (``"synthpop CART"``).
    policy
        The disclosure policy (a file, a :class:`bayessdc.Policy` or ``None`` for the default).
    out
        Optional output folder, all of it private: ``private/`` (measures, verdict, report) and
        ``private/evaluated/`` (the files judged and their description, read back by :func:`bayessdc.load`).
        An evaluation writes no ``release/``: the files given may be anything, the original included.
    seed
        Seed of the measures' random steps (inherent scenarios, bootstrap replicates).
    progress
        Stage messages of the ``bayessdc`` logger.
    attacks
        What the attacks against the control set use: a :class:`bayessdc.AttackSettings`, a preset's name
        (``"bayessdc"``, the defaults; ``"anonymeter"``, anonymeter 1.1's settings and form,
        :meth:`bayessdc.AttackSettings.preset`) or ``None`` (the defaults). Its columns are checked against the
        released ones before anything is measured.

    Returns
    -------
    bayessdc.Release
        With ``measured`` and ``policy`` set; ``diagnostics`` states that no posterior was gated.

    Raises
    ------
    bayessdc.InputError
        A synthetic column the original lacks, a level the original lacks, a column of ``synthesize``/``keep``
        absent, a kept column that is not the original's record by record, an attack setting naming a column
        not released, or a control set that is too small or repeats training records; before anything is
        measured.

    Examples
    --------
    >>> import bayessdc as bsd
    >>> persons = bsd.examples.acs_persons(400, seed=1)
    >>> elsewhere = persons.assign(education=persons["education"].sample(frac=1, random_state=2).to_numpy())
    >>> release = bsd.evaluate(persons[["age", "sex", "education"]], elsewhere[["age", "sex", "education"]],
    ...                        synthesize="education", keep="age,sex", name="shuffled", progress=False)
    >>> release.synthesizer, release.m, release.description["kind"]
    ('shuffled', 1, 'partially synthetic')
    >>> "expected_match_risk" in set(release.risk()["measure"])
    True
    """
    from bayessdc import progress as _progress
    from bayessdc.measures import MeasureInput
    from bayessdc.pipeline import column_list
    from bayessdc.pipeline.releasing import measure_and_judge
    from bayessdc.policy import load_policy
    from bayessdc.recipes.cart.measures import table_specs
    from bayessdc.recipes.cart.reference import identification_input
    from bayessdc.recipes.categorical.input import check_known_sets
    from bayessdc.release import Diagnostics, Release
    from bayessdc.report import ReportContent
    from bayessdc.synthesis.output import check_output_root, fingerprint_frame

    from .control import check_control

    if out is not None:
        check_output_root(out)  # before anything is measured
    start = time.perf_counter()
    disclosure_policy = load_policy(policy)
    original, stacked = _frame(original, "original"), stack_synthetic(synthetic)
    for what, frame in (("the original", original), ("the synthetic data", stacked)):
        if frame.empty:
            raise InputError(f"{what} has no rows: nothing to evaluate")
    keep_columns, synthesize_columns = column_list(keep) or [], column_list(synthesize)
    released = _check_columns(original, stacked, {"keep": keep_columns, "synthesize": synthesize_columns or []})
    original, stacked = check_values(original, released), check_values(stacked, released)
    groups = [known] if isinstance(known, str) else list(known or [])
    unknown = sorted({c for group in groups for c in column_list(group) or []} - set(released))
    if unknown:
        raise InputError(f"known= column(s) {', '.join(map(repr, unknown))} are not columns of the synthetic data")
    disclosure_policy.check_columns(released, name)
    settings = check_attack_settings(attacks, released)
    original = original[released]
    stacked = stacked.astype({c: original[c].dtype for c in released if stacked[c].dtype != original[c].dtype},
                             errors="ignore")  # fmt: skip
    keep_columns, synthesize_columns = decide_roles(original, stacked, released, keep_columns,
                                                    synthesize_columns or [])  # fmt: skip
    partially = bool(keep_columns)
    removed = len(original) * stacked["synthetic"].nunique() - len(stacked)  # rows the other tool left out
    control = check_control(original, _frame(holdout, "holdout"), released) if holdout is not None else None
    data = MeasureInput(
        stacked, original, released=released, synthesized=synthesize_columns, kept=keep_columns,
        partially_synthetic=partially and not removed, holdout=control, seed=seed, bootstrap=bootstrap,
        attacks=settings, tables=table_specs(tables, original, original, synthesize_columns, keep_columns),
    )  # fmt: skip
    if partially and not removed:
        identification_input(data, keep_columns, synthesize_columns)
        if known is not None:
            data.known_sets = check_known_sets(known, synthesize_columns, keep_columns)
    m = data.m
    kind = "partially synthetic" if partially else "fully synthetic"
    description = {
        "synthesizer": name, "source": "synthetic data made elsewhere, evaluated by bayessdc (no model fitted here)",
        "kind": kind, "synthesized": synthesize_columns, "kept": keep_columns, "m": m, "seed": seed,
        "control_set": None if control is None else {"records": len(control)},
        "attacks": settings.to_dict(),
    }  # fmt: skip
    if partially and removed:
        description["rows_removed"] = {"rows": int(removed), "not computed": ROW_ALIGNED}
    summary = {"passed": True, "gate": "none: no posterior was fitted here, so there is nothing to gate",
               "evaluation": True}  # fmt: skip
    identity = {"evaluate": name, "input": fingerprint_frame(original), "synthetic": fingerprint_frame(stacked),
                "m": m, "seed": seed, "attacks": settings.to_dict()}  # fmt: skip
    if not disclosure_policy.builtin:
        identity["policy"] = {"name": disclosure_policy.name, "digest": disclosure_policy.digest}
    release = Release(
        synthesizer=name, synthetic=stacked, description=description, diagnostics=Diagnostics({}, summary, True),
        identity=identity, m=m, seed=seed, facts={"records": len(original), "kind": kind},
        measure_input=data,
    )  # fmt: skip
    with _progress.call_logging(progress):
        _log.info("%s: judged as %s data (%s)", name, kind,
                  f"{', '.join(keep_columns)} the original's records in every dataset" if partially
                  else "no column is the original's record by record in every dataset")  # fmt: skip
        if partially and removed:
            _log.warning("%s: %d row(s) removed from the datasets: %s", name, removed, ROW_ALIGNED)
        release = measure_and_judge(release, disclosure_policy, name, {}, progress)
    verdict = release.policy
    verdict.evaluation = True
    kept = f"; {', '.join(keep_columns)} kept" if keep_columns else ""
    release = replace(
        release, policy_tried=[verdict],
        description={**release.description,
                     "disclosure_policy": {**disclosure_policy.describe(), "released_under": {}}},
        report_content=ReportContent(
            original=original, synthetic=stacked, compared=list(synthesize_columns),
            about=[f"{name}: {m} {kind} dataset(s) of {len(original):,} records made elsewhere and evaluated here "
                   f"({', '.join(synthesize_columns)} synthesized{kept}). No model was fitted here: there are no "
                   "posterior diagnostics."],
        ),
        seconds=time.perf_counter() - start,
    )  # fmt: skip
    if out is not None:
        _write(release, Path(out))
    return release


#: Where an evaluation keeps the files it judged and their description (read back by :func:`bayessdc.load`).
EVALUATED = "evaluated"


def _write(release: Any, out: Path) -> None:
    """``private/`` only, the files evaluated under ``private/evaluated/``: an evaluation releases nothing (issue
    46): files given as "synthetic" may be anything, the original included, so none of it goes to ``release/``."""
    from bayessdc.synthesis.output import OutputFolder, json_writer, table_writer

    with OutputFolder(out, release.identity) as folder:
        release.write_private(folder)
        folder.write_private_file(f"{EVALUATED}/model.json", json_writer(release.description))
        folder.write_private_file(f"{EVALUATED}/synthetic.parquet", table_writer(release.synthetic))
