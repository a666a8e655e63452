"""A control set the fit never sees: held-out records of the confidential table, or real records given apart.

The attack measures (singling out, linkability, inference, distance to the closest record) and the records-copied
reference compare what an attacker achieves on the training records with what the same attack achieves on real
records that were not used for the fit. :func:`split_holdout` draws such a control set from the table before
anything is fitted; :func:`check_control` refuses a control frame that cannot serve as one (columns missing,
too few records, or records of the training table).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = ["MIN_CONTROL_RECORDS", "MIN_TRAINING_RECORDS", "align_control", "check_control", "hold_out", "split_holdout"]

#: Fewest control records the attack measures accept: the 95% interval of a success rate on the control set
#: is about +-0.1 wide at 100 records (1.96 sqrt(0.25 / 100)); fewer cannot tell an attack from its control.
MIN_CONTROL_RECORDS = 100

#: Fewest training records a holdout may leave for the fit: as many as the control set needs, so that the two
#: groups the attack measures compare are each large enough to tell apart (``holdout=0.999`` fitted on one record
#: and released it, issue 46).
MIN_TRAINING_RECORDS = MIN_CONTROL_RECORDS


def split_holdout(frame: pd.DataFrame, fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The training records and a random ``fraction`` of ``frame`` held out as the control set.

    Parameters
    ----------
    frame
        The confidential table.
    fraction
        Share of records held out, strictly between 0 and 1.
    seed
        The run's seed (the same seed holds out the same records).

    Returns
    -------
    training, control
        Both keep ``frame``'s row order and index.

    Raises
    ------
    bayessdc.InputError
        ``fraction`` outside (0, 1), a control set smaller than :data:`MIN_CONTROL_RECORDS` (the message
        names the minimum and the fraction it needs), or fewer than :data:`MIN_TRAINING_RECORDS` records left
        to fit on.

    Examples
    --------
    >>> frame = pd.DataFrame({"x": range(1000)})
    >>> training, control = split_holdout(frame, 0.2, seed=1)
    >>> len(training), len(control), bool(set(training["x"]) & set(control["x"]))
    (800, 200, False)
    """
    from bayessdc.synthesis import streams
    from bayessdc.synthesis.streams import Stream

    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction < 1:
        raise InputError(
            f"holdout= takes a share of the records strictly between 0 and 1 (or a frame), got {fraction!r}"
        )
    n_control = int(round(fraction * len(frame)))
    if n_control < MIN_CONTROL_RECORDS:
        needed = math.ceil(MIN_CONTROL_RECORDS / max(len(frame), 1) * 100) / 100
        raise InputError(
            f"holdout={fraction} holds out {n_control} of {len(frame)} records; the attack measures need at least "
            f"{MIN_CONTROL_RECORDS} control records ("
            + (f"holdout={needed} or more)" if needed < 1 else "too few records to hold out that many)")
        )
    if len(frame) - n_control < MIN_TRAINING_RECORDS:
        most = math.floor((len(frame) - MIN_TRAINING_RECORDS) / max(len(frame), 1) * 100) / 100
        raise InputError(
            f"holdout={fraction} leaves {len(frame) - n_control} of {len(frame)} records to fit on; the fit needs at "
            f"least {MIN_TRAINING_RECORDS} training records ("
            + (f"holdout={most} or less)" if most * len(frame) >= MIN_CONTROL_RECORDS else
               f"too few records for {MIN_CONTROL_RECORDS} control and {MIN_TRAINING_RECORDS} training records)")
        )  # fmt: skip
    rng = streams.rng(seed, Stream.HOLDOUT)
    held = np.zeros(len(frame), bool)
    held[rng.choice(len(frame), size=n_control, replace=False)] = True
    return frame[~held], frame[held]


def check_control(training: pd.DataFrame, control: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``control`` on ``columns``, checked to serve as a control set for ``training``.

    A control set is real records of the same population that the fit never saw. Without record identifiers,
    overlap shows in whole rows: a control record drawn apart from the training records equals some training
    record on every column about as often as a training record equals another one (the leave-one-out share of
    :func:`bayessdc.risk.copies.copied_reference`). A control frame whose rows equal training rows far more often
    (beyond that share plus four binomial standard errors, and at least five rows more) holds training records.

    Raises
    ------
    bayessdc.InputError
        A column missing, fewer than :data:`MIN_CONTROL_RECORDS` records, or rows that repeat training records
        (the first of them named by their position in ``control``).
    """
    from bayessdc.risk.copies import copied_reference, rows_in_original

    missing = [c for c in columns if c not in control.columns]
    if missing:
        raise InputError(f"the control set lacks the column(s) {', '.join(map(repr, missing))}")
    if len(control) < MIN_CONTROL_RECORDS:
        raise InputError(
            f"the control set has {len(control)} records; the attack measures need at least {MIN_CONTROL_RECORDS}"
        )
    control = control[list(columns)].reset_index(drop=True)
    repeats = rows_in_original(training, control, list(columns))
    expected = copied_reference(training, list(columns))
    n = len(control)
    limit = n * expected + max(4 * math.sqrt(n * expected * (1 - expected)), 5)
    if repeats.sum() > limit:
        rows = np.flatnonzero(repeats)[:5].tolist()
        raise InputError(
            f"the control set repeats training records: {int(repeats.sum())} of its {n} rows equal a training row on "
            f"every column (rows {rows}{', ...' if repeats.sum() > 5 else ''}), against about {n * expected:.0f} for "
            "records the fit never saw; give records that were not used for the fit"
        )
    return control


def hold_out(
    frame: pd.DataFrame, holdout: float | pd.DataFrame | str | os.PathLike[str] | None, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, Any] | None]:
    """The training records, the control set and how it was made (for the run's identity and ``model.json``).

    ``holdout`` is ``None`` (no control set), a share of ``frame`` to hold out before the fit
    (:func:`split_holdout`), or a frame or file of real records the fit never sees (:func:`check_control`,
    on every column of ``frame``).
    """
    from bayessdc.synthesis.output import fingerprint_frame

    from .io import read_table

    if holdout is None:
        return frame, None, None
    if isinstance(holdout, str | os.PathLike):
        holdout = read_table(holdout)
    if isinstance(holdout, pd.DataFrame):
        control = check_control(frame, holdout, list(frame.columns))
        return frame, control, {"given": True, "records": len(control), "input": fingerprint_frame(control),
                                "fitted_on": len(frame)}  # fmt: skip
    training, control = split_holdout(frame, holdout, seed)
    return training, control, {"given": False, "share": float(holdout), "records": len(control),
                               "fitted_on": len(training)}  # fmt: skip


def align_control(control: pd.DataFrame, original: pd.DataFrame) -> pd.DataFrame:
    """``control`` on the columns of a release's ``original`` (the measures' confidential records), each column in
    the original's type: a category the original lacks becomes missing, so that it matches no training record."""
    aligned = control[list(original.columns)].reset_index(drop=True)
    for column in original.columns:
        if aligned[column].dtype != original[column].dtype:
            try:
                aligned[column] = aligned[column].astype(original[column].dtype)
            except (TypeError, ValueError):
                aligned[column] = aligned[column].astype(str).astype(original[column].dtype, errors="ignore")
    return aligned
