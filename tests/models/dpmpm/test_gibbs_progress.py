"""The Gibbs sampler's progress bar: the chains' iterations counted on a terminal, the draws unchanged."""

import io

import numpy as np
import pandas as pd
from rich.console import Console

from bayessdc import progress
from bayessdc.models.dpmpm import GibbsSettings, build_model, model_hyperparameters, prepare_categorical, run_gibbs


def _problem():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 200), "b": rng.integers(0, 4, 200)})
    data = prepare_categorical(frame, ["b"], ["a"])
    return data, model_hyperparameters(build_model(data, K=5), data)


def test_the_bar_counts_every_iteration_of_every_chain_and_the_draws_are_the_same(terminal):
    data, hyper = _problem()
    settings = GibbsSettings(draws=300, burn=100, chains=3, thin=2)
    with progress.enabled(False):
        quiet = run_gibbs(data, hyper, settings, seed=5, cores=1)
    shown = run_gibbs(data, hyper, settings, seed=5, cores=1)
    text = terminal.getvalue()
    assert "Gibbs, 3 chain(s)" in text
    assert "1200/1200" in text  # 3 chains x (100 burn-in + 300 kept) iterations, every one counted
    assert "━" in text
    for key in ("alpha", "pi", "theta", "occupied"):  # the bar's threads do not change a draw
        np.testing.assert_array_equal(quiet[key], shown[key])


def test_no_bar_characters_when_the_output_is_a_file(monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    data, hyper = _problem()
    out = io.StringIO()
    with progress.enabled(True), progress.use_console(Console(file=out, force_jupyter=False)):
        run_gibbs(data, hyper, GibbsSettings(draws=50, burn=10, chains=2, thin=1), seed=1)
    assert out.getvalue() == ""
