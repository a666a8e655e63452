"""The group runner's progress: a bar over the groups on a terminal, one log record per group with its figures,
and a warning for a group that did not converge."""

import logging
from dataclasses import dataclass

import arviz as az
import numpy as np

from bayessdc import progress
from bayessdc.synthesis.runner import GroupTask, run_groups, run_parts
from tests.conjugate import DirichletSynthesizer


def _groups():
    rng = np.random.default_rng(0)
    return [(f"g{k}", rng.choice(4, 30 + 10 * k, p=[0.55, 0.25, 0.15, 0.05])) for k in range(4)]


@dataclass
class _StuckOnG2(DirichletSynthesizer):
    """Exact draws, except that group g2's two chains sit at different values (its r_hat is huge)."""

    def fit(self, data, seed):
        idata = super().fit(data, seed)
        if len(data) == 50:  # g2
            theta = idata.posterior["theta"].to_numpy()
            theta[1] = theta[1][:, ::-1]
            idata = az.from_dict(
                posterior={"theta": theta},
                sample_stats={"diverging": np.zeros(theta.shape[:2], dtype=bool)},
                dims={"theta": ["category"]},
            )
        return idata


def test_one_record_per_group_with_its_figures_and_a_warning_for_an_unconverged_one(tmp_path, caplog):
    task = GroupTask(_StuckOnG2(draws=400), tmp_path, m=2, seed=3)
    with caplog.at_level(logging.INFO, logger="bayessdc"):
        results = run_groups(task, _groups(), scheduler="synchronous")
    info = [r for r in caplog.records if r.name == "bayessdc.synthesis.runner" and r.levelno == logging.INFO]
    assert [r.group for r in info] == ["g0", "g1", "g2", "g3"]
    for record, result in zip(info, results, strict=True):
        assert record.r_hat == result.convergence["max_r_hat"]
        assert record.ess_bulk == result.convergence["min_ess_bulk"]
        assert record.divergences == 0 and record.seconds == result.summary["fit_seconds"] and not record.resumed
        assert f"r_hat {result.convergence['max_r_hat']:.3f}" in record.getMessage()
    assert [r.converged for r in info] == [True, True, False, True]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.group for r in warnings] == ["g2"]
    assert "g2 did not converge: r_hat" in warnings[0].getMessage()
    # a rerun resumes every group: still one record each, marked resumed
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bayessdc"):
        run_groups(task, _groups(), scheduler="synchronous")
    info = [r for r in caplog.records if r.levelno == logging.INFO]
    assert [(r.group, r.resumed, r.seconds) for r in info] == [(f"g{k}", True, None) for k in range(4)]
    assert all(r.getMessage().endswith("resumed") for r in info)


def test_silenced_runner_logs_nothing(tmp_path, caplog):
    with caplog.at_level(logging.DEBUG, logger="bayessdc.synthesis.runner"):
        run_groups(GroupTask(DirichletSynthesizer(draws=200), tmp_path, m=2, seed=3), _groups()[:2],
                   scheduler="synchronous", progress=None)  # fmt: skip
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]


def test_a_bar_over_the_groups_on_a_terminal(tmp_path, terminal):
    run_groups(GroupTask(DirichletSynthesizer(draws=200), tmp_path, m=2, seed=3), _groups(), scheduler="synchronous")
    text = terminal.getvalue()
    assert "groups" in text and "4/4" in text and "━" in text


def test_a_bar_over_parts_run_on_a_local_cluster(terminal):
    results = run_parts(lambda name, x: x * 2, [(f"p{k}", k) for k in range(3)], workers=2, label="chains")
    assert results == [0, 2, 4]
    text = terminal.getvalue()
    assert "chains" in text and "3/3" in text


def test_no_bar_when_the_output_is_not_a_terminal(tmp_path, monkeypatch, capsys):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    task = GroupTask(DirichletSynthesizer(draws=200), tmp_path, m=2, seed=3)
    with progress.enabled(True):
        run_groups(task, _groups(), scheduler="synchronous")
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err and "━" not in err
