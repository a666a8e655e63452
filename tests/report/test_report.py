"""The report package: verdicts in words, plots that draw the numbers given, a page that escapes and embeds."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayessdc.errors import InputError
from bayessdc.report import RiskUtilityPanel, compare_releases, gate_verdict, load_run, plots
from bayessdc.report.compare import FIGURES_FILE, RunFigures
from bayessdc.report.html import Document, format_value
from tests.report.html_sections import by_title, parse_report

CRITERIA = {"max_r_hat": 1.01, "min_ess_bulk": 400.0, "max_divergences": 0}


def test_release_gate_verdict_counts_the_figures_within_tolerance_and_says_the_parameter_gate_is_a_diagnostic():
    summary = {
        "parameter_gate": {"passed": False, "criteria": CRITERIA, "fits": {"all": {"passed": False}}},
        "release_gate": {
            "passed": False,
            "chains": 8,
            "datasets_per_chain": 50,
            "figures": {"a": {"passed": True}, "b": {"passed": False}, "c": {"passed": True}},
        },
    }
    text, passed = gate_verdict(summary)
    assert not passed
    assert text.startswith("Release gate FAILED: 2 of 3 pooled")
    assert "8 chains, 50 synthetic datasets per chain" in text
    assert "did not pass; for this synthesizer it is a diagnostic only" in text
    assert text.endswith("Nothing was released.")
    text, _ = gate_verdict(summary, allow_unconverged=True)
    assert text.endswith("Released only because allow_unconverged=True was given.")


def test_parameter_gate_verdict_names_the_failed_fits():
    fits = {f"S{k}": {"passed": k not in (2, 5)} for k in range(7)}
    text, passed = gate_verdict({"parameter_gate": {"passed": False, "criteria": CRITERIA, "fits": fits}})
    assert not passed
    assert "2 of 7 fits (S2, S5)" in text
    text, passed = gate_verdict({"parameter_gate": {"passed": True, "criteria": CRITERIA, "fits": {"all": {}}}})
    assert passed and text.startswith("Parameter gate PASSED: the fit met the criteria (split r_hat at most 1.01")


def test_compare_column_draws_the_shares_of_each_category():
    original = pd.Series(["a"] * 6 + ["b"] * 3 + ["c"] * 1)
    synthetic = pd.DataFrame(
        {"synthetic": [1] * 10 + [2] * 10, "x": ["a"] * 5 + ["b"] * 5 + ["a"] * 7 + ["c"] * 3}
    )
    fig = plots.compare_column(original, synthetic, "x")
    ax = fig.axes[0]
    heights = [round(p.get_height(), 6) for p in ax.patches]
    # original bars in the original's order a, b, c, then the synthetic means: a (0.5+0.7)/2, b 0.25, c 0.15
    assert heights == [0.6, 0.3, 0.1, 0.6, 0.25, 0.15]
    ranges = ax.collections[0].get_segments()  # the range over datasets of each category
    assert [tuple(np.round(s[:, 1], 6)) for s in ranges] == [(0.5, 0.7), (0.0, 0.5), (0.0, 0.3)]


def test_compare_column_of_many_categories_plots_shares_against_each_other():
    rng = np.random.default_rng(0)
    original = pd.Series(rng.integers(0, 200, 2000).astype(str))
    synthetic = pd.DataFrame({"synthetic": 1, "x": original.sample(frac=1, random_state=1).to_numpy()})
    ax = plots.compare_column(original, synthetic, "x").axes[0]
    # the points: original share against synthetic share (the same values here)
    x, y = (np.asarray(v, float) for v in ax.lines[0].get_data())
    np.testing.assert_allclose(x, y)
    assert len(x) == original.nunique()


def test_risk_utility_plot_places_each_run_and_its_bounds():
    a = RiskUtilityPanel("risk", "pMSE ratio", [{"label": "release", "risk": 3.0, "utility": 1.5}],
                         {"inherent minimum": 2.0, "inherent maximum": 5.0}, "lower")
    b = RiskUtilityPanel("risk", "pMSE ratio", [{"label": "release", "risk": 4.0, "utility": 1.2},
                                                 {"label": "stage 1", "risk": 4.5, "utility": None}])
    ax = plots.risk_utility([("A", a), ("B", b)]).axes[0]
    points = [tuple(c.get_offsets()[0]) for c in ax.collections]
    assert points == [(3.0, 1.5), (4.0, 1.2)]  # a point without a utility is not drawn
    assert sorted(line.get_xdata()[0] for line in ax.lines) == [2.0, 5.0]
    assert "↓ better" in ax.get_ylabel()
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["A: release", "A: inherent minimum", "A: inherent maximum", "B: release"]


def test_bounds_panels_draw_the_three_distributions_of_each_measure():
    measure = plots.BoundsMeasure("m", [1.0, 2.0, 3.0], [0.5, 0.6, 0.7], [9.0])
    ax = plots.bounds_panels([measure]).axes[0]
    medians = [line.get_ydata()[0] for line in ax.lines if line.get_color() in ("C1", "#ff7f0e")]
    assert medians == [0.6, 2.0]  # the two boxes' medians; the single maximum is a marker at 9
    assert ax.collections[0].get_offsets().tolist() == [[3.0, 9.0]]


def test_document_escapes_text_and_embeds_the_figure_whole():
    doc = Document("a <b>report</b>")
    doc.heading("Section <1>")
    doc.table(pd.DataFrame({"<script>": [1.23456, 2]}))
    doc.figure(plots.scatter_identity([1, 2], [1, 2], "x", "y", "t"), "caption & more")
    page = doc.render()
    assert "<script>" not in page and "&lt;script&gt;" in page
    parsed = parse_report(page)
    assert not parsed.external
    section = by_title(parsed)["Section <1>"]
    assert len(section.images) == 1 and section.tables == 1
    assert "1.235" in section.text and "caption & more" in section.text


def test_format_value():
    assert [format_value(v) for v in (None, True, 12345, 0.000012, 1.23456, float("nan"), list(range(14)))] == [
        "n/a", "yes", "12,345", "1.200e-05", "1.235", "n/a", "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ... (14 in all)"]


def _run_folder(root, name, panels, passed=True):
    folder = root / name / "private"
    folder.mkdir(parents=True)
    figures = RunFigures(name, "dpmpm", 5, 1, "Release gate PASSED", passed, panels)
    (folder / FIGURES_FILE).write_text(json.dumps(figures.to_dict()))
    (folder / "report.html").write_text("<html></html>")
    return root / name


def test_compare_releases_puts_runs_with_the_same_measures_on_one_plot(tmp_path):
    shared = RiskUtilityPanel("match risk", "pMSE ratio", [{"label": "release", "risk": 3.0, "utility": 1.5}],
                              {"inherent minimum": 2.0})
    other = RiskUtilityPanel("share within band", "overlap", [{"label": "release", "risk": 0.2, "utility": 0.9}])
    a = _run_folder(tmp_path, "a", [shared])
    b = _run_folder(tmp_path, "b", [shared, other], passed=False)
    assert load_run(a).panels[0] == shared
    out = compare_releases([a, b], tmp_path / "out" / "compare.html", labels=["DPMPM", "DP-areal"])
    parsed = parse_report(out.read_text())
    assert not parsed.external
    section = by_title(parsed)["Risk against utility"]
    assert len(section.images) == 2  # one plot per pair of measures: the shared one holds both runs
    assert "match risk against pMSE ratio" in section.text and "share within band against overlap" in section.text
    runs = by_title(parsed)["The runs"].text
    assert "DPMPM" in runs and "FAILED" in runs and "../a/private/report.html" in runs


def test_compare_releases_refuses_a_release_folder_and_a_folder_that_is_no_run(tmp_path):
    a = _run_folder(tmp_path, "a", [])
    with pytest.raises(InputError, match="outside any release/ folder"):
        compare_releases([a], tmp_path / "a" / "release" / "x.html")
    with pytest.raises(InputError, match="not a finished bayessdc synthesis run"):
        compare_releases([tmp_path], tmp_path / "x.html")
    with pytest.raises(InputError, match="2 labels for 1 runs"):
        compare_releases([a], tmp_path / "x.html", labels=["x", "y"])


def test_variable_roles_counts_distinct_values_and_colours_the_synthesized():
    frame = pd.DataFrame({"county": ["a", "b", "c", "a"], "gender": [1, 2, 1, 1]})
    ax = plots.variable_roles(frame, ["county"]).axes[0]
    assert [p.get_width() for p in ax.patches] == [3, 2]
    assert ax.patches[0].get_facecolor() != ax.patches[1].get_facecolor()


def test_a_panel_without_a_drawable_point_draws_without_a_warning():
    import warnings

    panel = RiskUtilityPanel("risk", "utility", [{"label": "release", "risk": None, "utility": 1.0}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = plots.risk_utility([("", panel)])
        figure.savefig(__import__("io").BytesIO(), format="png")
    assert figure.axes[0].get_legend() is None


def test_the_rank_plot_shows_the_element_whose_chains_disagree_most_and_skips_constants():
    import warnings

    import xarray as xr

    from bayessdc.report.run import rank_quantities

    rng = np.random.default_rng(0)
    theta = rng.normal(size=(4, 100, 3))
    theta[1, :, 2] += 3.0  # chain 1 stuck elsewhere for element 2
    occupied = np.repeat([[5.0], [5.0], [6.0], [6.0]], 100, axis=1)  # constant within each chain
    posterior = xr.Dataset(
        {"theta": (("chain", "draw", "k"), theta), "occupied": (("chain", "draw"), occupied),
         "fixed": (("chain", "draw"), np.ones((4, 100)))},
        coords={"k": ["a", "b", "c"]},
    )

    class Idata:
        pass

    idata = Idata()
    idata.posterior = posterior
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = rank_quantities({"all": idata}, "all", {"worst_r_hat": "theta"}, ["occupied"])
    assert list(chosen.data_vars) == ["occupied", "theta[c]"]  # the constant "fixed" has no ranks to show


def test_a_policy_verdict_judged_by_nothing_is_boxed_apart_from_met_and_failed():
    # issue 46: "no criterion of it applies" was shown in the same green box as a policy that was met
    from bayessdc.policy import Criterion, Judgement, Policy, Verdict
    from bayessdc.report.run import policy_section

    policy = Policy(name="p", criteria=(Criterion(measure="expected_match_risk", at_most=1.0),))
    criterion = policy.criteria[0]

    def boxed(judgements):
        doc = Document("t")
        policy_section(doc, Verdict(policy, judgements))
        html = doc.render()
        return [c for c in ("passed", "failed", "unjudged") if f'class="verdict {c}"' in html]

    met = Judgement(criterion, "all", 0.5, None, 1.0, "1", True)
    failed = Judgement(criterion, "all", 2.0, None, 1.0, "1", False)
    unjudged = Judgement(criterion, "all", None, None, None, "", None, "no such subset")
    assert boxed([met]) == ["passed"]
    assert boxed([met, failed]) == ["failed"]
    assert boxed([unjudged]) == ["unjudged"] and boxed([]) == ["unjudged"]
    doc = Document("t")
    policy_section(doc, Verdict(policy, [met]))
    html = doc.render()  # issue 49, item 5: the reference and the test each in a column of its own
    assert all(f">{column}<" in html for column in ("figure", "reference", "reference 95% interval", "test"))
