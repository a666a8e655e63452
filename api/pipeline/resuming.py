"""A refused run taken up again: ``bsd.synthesize(..., resume=refusal)`` (issue 35).

A refusal of the gate (:class:`bayessdc.ConvergenceError`) carries the run's fit and identity. A later call on the
same data, columns, model and seed takes that fit instead of fitting again, so that an override
(``allow_unconverged=True``) or a larger budget of chains for the stopping rule (:mod:`bayessdc.pipeline.stopping`)
costs no refit.
"""

from __future__ import annotations

from typing import Any

from bayessdc.models.sampling import ConvergenceError

from ..errors import InputError
from .recipe import Fitted

__all__ = ["resumed_fit"]

#: What a resumed run may change: the number of datasets, the policy, the release gate's budget of chains and
#: time (the fit is the refused run's).
_RESUMABLE = ("m", "policy", "release_gate.max_chains", "release_gate.time_budget")


def resumed_fit(resume: ConvergenceError | None, identity: dict[str, Any]) -> Fitted | None:
    """The refused run's fit, checked against this run's identity (``None`` when nothing is resumed).

    Parameters
    ----------
    resume
        The refusal, or ``None``.
    identity
        This run's identity (what its output folder is keyed by).

    Returns
    -------
    Fitted or None
        The refused run's fit.

    Raises
    ------
    bayessdc.InputError
        ``resume`` is not a refusal of :func:`bayessdc.synthesize`, or the runs differ in anything but
        :data:`_RESUMABLE`.
    """
    if resume is None:
        return None
    if not isinstance(resume, ConvergenceError) or resume.fitted is None or resume.identity is None:
        raise InputError("resume= takes the bayessdc.ConvergenceError of a refused bsd.synthesize call")

    def comparable(run: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in run.items() if k not in ("m", "policy")}
        if isinstance(out.get("release_gate"), dict):
            out["release_gate"] = {
                k: v for k, v in out["release_gate"].items() if k not in ("max_chains", "time_budget")
            }
        return out

    now, then = comparable(identity), comparable(resume.identity)
    differ = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
    if differ:
        raise InputError(
            f"resume= takes a refused run of the same data, columns, model and seed; {', '.join(differ)} differ "
            f"(only {', '.join(_RESUMABLE)} may)"
        )
    return resume.fitted
