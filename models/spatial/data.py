"""The input of the spatial synthesizer: checks and :class:`SpatialData` (Quick, Holan & Wikle, Section 5).

Every check runs before any sampling and names the column, the rows and the constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

import bayessdc.synthesis.streams as streams
from bayessdc.synthesis.streams import Stream

from ..errors import InputError
from ..validation import name_rows

__all__ = ["SpatialData", "SpatialDataError", "prepare_spatial_data"]


class SpatialDataError(InputError):
    """The spatial data cannot be modelled as given (the message names the column or rows at fault)."""


@dataclass
class SpatialData:
    """One spatial dataset on the modelling scale.

    Attributes
    ----------
    coords
        Locations, shape ``(N, 2)`` (jittered if jitter was requested).
    y
        Response on the modelling scale (log scale with ``log_response``).
    X
        Design matrix, shape ``(N, p)``; the first column is the intercept.
    covariate_names
        Names of the columns of ``X`` (``"intercept"`` first).
    log_response
        Whether ``y`` is the log of the released response.
    n_jittered
        Number of locations moved by jitter (0 when none was requested).
    """

    coords: np.ndarray
    y: np.ndarray
    X: np.ndarray
    covariate_names: list[str]
    log_response: bool = False
    n_jittered: int = 0

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.y)

    def with_response(self, y: np.ndarray) -> SpatialData:
        """The same locations and covariates with another response (modelling scale)."""
        return SpatialData(self.coords, np.asarray(y, float), self.X, self.covariate_names, self.log_response)

    def released(self, values: np.ndarray) -> np.ndarray:
        """Values on the released scale (``exp`` when the response is modelled on the log scale)."""
        return np.exp(values) if self.log_response else np.asarray(values)


def _numeric(frame: pd.DataFrame, column: str, role: str) -> np.ndarray:
    if column not in frame.columns:
        raise SpatialDataError(
            f"{role} column {column!r} is not in the table; it has {', '.join(repr(str(c)) for c in frame.columns)}"
        )
    raw = frame[column]
    missing = raw.isna().to_numpy()
    if missing.any():
        raise SpatialDataError(f"{role} column {column!r} has missing values at {name_rows(missing)}")
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        raise SpatialDataError(f"{role} column {column!r} is not numeric at {name_rows(bad)}")
    out = values.to_numpy(dtype=float)
    infinite = ~np.isfinite(out)
    if infinite.any():
        raise SpatialDataError(f"{role} column {column!r} has infinite values at {name_rows(infinite)}")
    return out


def prepare_spatial_data(
    frame: pd.DataFrame,
    response: str,
    coords: tuple[str, str],
    covariates: tuple[str, ...] | list[str] = (),
    *,
    log_response: bool = False,
    jitter: float | None = None,
    seed: int = 0,
    min_points: int = 10,
) -> SpatialData:
    """Check a table and turn it into :class:`SpatialData`, before any sampling.

    Parameters
    ----------
    frame
        One row per record.
    response
        Column of the confidential continuous response (replaced in the synthetic data).
    coords
        The two coordinate columns (x, y); Euclidean distances are used.
    covariates
        Covariate columns (an intercept is always included).
    log_response
        Model ``log(response)``; the response must then be positive.
    jitter
        When given, records that share a location are moved by a uniform random offset in a disc of this
        radius (seeded by ``seed``); otherwise shared locations are an error.
    seed
        Seed of the jitter.
    min_points
        Fewest records accepted.

    Raises
    ------
    SpatialDataError
        Missing columns, missing, non-numeric or infinite values, a non-positive response with
        ``log_response``, duplicate locations without ``jitter``, or fewer than ``min_points`` records (or none).
    """
    if len(coords) != 2:
        raise SpatialDataError(f"give exactly two coordinate columns, got {list(coords)}")
    frame = frame.reset_index(drop=True)
    if len(frame) == 0:
        raise SpatialDataError(f"the table has no rows: at least {min_points} records are needed")
    if len(frame) < min_points:
        raise SpatialDataError(
            f"{len(frame)} records are too few for a spatial model: at least {min_points} are needed to "
            "estimate a covariance function"
        )
    y = _numeric(frame, response, "response")
    xy = np.column_stack([_numeric(frame, c, "coordinate") for c in coords])
    columns = [_numeric(frame, c, "covariate") for c in covariates]
    if log_response:
        non_positive = y <= 0
        if non_positive.any():
            raise SpatialDataError(
                f"response column {response!r} has non-positive values at {name_rows(non_positive)}, so it has no "
                "log; drop log_response= or remove those records"
            )
        y = np.log(y)
    n_jittered = 0
    duplicated = pd.DataFrame(xy).duplicated(keep=False).to_numpy()
    if duplicated.any():
        if jitter is None or jitter <= 0:
            raise SpatialDataError(
                f"{int(duplicated.sum())} records share a location ({coords[0]!r}, {coords[1]!r}) with another "
                f"record ({name_rows(duplicated)}): their nearest-neighbour distance is 0, so none of them can be "
                "flagged as a spatial outlier, "
                "and their spatial effects cannot be told apart. Aggregate them, or pass jitter=DIST to move "
                "each of them by a random offset of at most DIST (in coordinate units; seeded, recorded)"
            )
        rng = streams.rng(seed, Stream.JITTER)
        k = int(duplicated.sum())
        angle = rng.uniform(0, 2 * np.pi, k)
        radius = jitter * np.sqrt(rng.uniform(0, 1, k))
        xy = xy.copy()
        xy[duplicated] += np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
        n_jittered = k
    for name, column in zip(covariates, columns, strict=True):
        if np.ptp(column) == 0:
            raise SpatialDataError(f"covariate column {name!r} is constant; the intercept already covers it")
    X = np.column_stack([np.ones(len(y)), *columns]) if columns else np.ones((len(y), 1))
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise SpatialDataError("the covariates are collinear (the design matrix is not of full rank)")
    return SpatialData(xy, y, X, ["intercept", *covariates], log_response, n_jittered)
