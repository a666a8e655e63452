"""A release, a policy's verdict and a set of measures display themselves in a notebook (issue 49, item 6).

One small CART release (seconds) is made once; its HTML displays are checked for what a review board reads at a
glance (the verdict sentence, every criterion's row with its verdict coloured as the report colours it, the
synthesizer, m, the headline measures), for escaping, and for short reprs; its report plots are drawn by name;
and a real notebook kernel executes a cell ending in ``release`` and one in ``release.policy``, whose outputs
must carry the HTML.
"""

from __future__ import annotations

import html
import re

import pytest
from matplotlib.figure import Figure

import bayessdc as bsd
from bayessdc import display
from bayessdc.measures import MeasureSet

#: The release made both here and in the notebook: a policy of three criteria, one of them on a subset the
#: measure has not got (not judged), so that the display is checked on a passed and an unjudged row, and the
#: fixture does not depend on how the default policy judges this small release.
RELEASE_CODE = """
import bayessdc as bsd
policy = bsd.Policy(name="display-test", criteria=(
    bsd.Criterion("copied_records", statistic="worst", at_most=1.0, source="a share is at most 1 <always>"),
    bsd.Criterion("expected_match_risk", statistic="upper", at_most=1e9, source="any figure passes"),
    bsd.Criterion("attribute_disclosures", subset="no such subset", at_most=0.0, source="never judged"),
), reported={"table_tau": "utility, not judged"})
release = bsd.synthesize(bsd.examples.acs_persons(300, seed=1), bsd.CART(bootstrap=10), synthesize="education",
                         keep="age,sex", m=2, seed=0, policy=policy, progress=False)
"""


@pytest.fixture(scope="module")
def release() -> bsd.Release:
    namespace: dict = {}
    exec(RELEASE_CODE, namespace)
    return namespace["release"]


def _rows(markup: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", markup, flags=re.S)


def _row_of(markup: str, criterion: str) -> str:
    rows = [r for r in _rows(markup) if f">{html.escape(criterion)}<" in r]
    assert len(rows) == 1, f"{criterion!r}: {len(rows)} rows"
    return rows[0]


def test_the_verdict_shows_its_sentence_and_every_criterion_coloured(release):
    verdict = release.policy
    markup = verdict._repr_html_()
    assert html.escape(verdict.sentence()) in markup
    judged = [j for j in verdict.judgements if j.passed is not None]
    assert len(judged) == 2 and len(verdict.judgements) == 3  # the fixture's policy: two judged, one not
    for judgement, row in zip(verdict.judgements, verdict.table().to_dict(orient="records"), strict=True):
        tr = _row_of(markup, row["criterion"])
        expected = {True: "passed", False: "failed", None: "unjudged"}[judgement.passed]
        assert f'class="verdict {expected}"' in tr
        others = {"passed", "failed", "unjudged"} - {expected}
        assert not any(f'class="verdict {o}"' in tr for o in others)
        assert html.escape(row["verdict"]) in tr
        if row["source"]:
            assert html.escape(row["source"]) in tr  # the source of every row, escaped
    assert "&lt;always&gt;" in markup and "<always>" not in markup
    for column in verdict.table().columns:  # issue 49, item 5: the figure, the reference and the test apart
        assert f">{html.escape(column)}</th>" in markup
    assert {"figure", "reference", "reference 95% interval", "test"} <= set(verdict.table().columns)
    # the verdict's box: green, as the report's "verdict passed"
    assert re.search(r'<div class="verdict passed" style="background: #e6f4ea; border-left: 6px solid #1e7b34;',
                     markup)  # fmt: skip
    assert "table_tau (utility, not judged)" in markup  # the measures reported without a threshold


def test_a_failed_criterion_is_red_and_its_verdict_says_so(release):
    strict = bsd.Policy(name="no copies", criteria=(bsd.Criterion("copied_records", statistic="worst", at_most=0),))
    verdict = release.judge(strict)
    assert not verdict.passed
    markup = verdict._repr_html_()
    assert markup.count('class="verdict failed"') == 2  # the sentence's box and the row's verdict cell
    assert "#fdecea" in markup and "6px solid #b3261e" in markup
    assert "FAILED" in markup and ">FAILS<" in markup


def test_no_criterion_judged_is_grey_dashed_never_green(release):
    none = bsd.Policy(name="none", criteria=(bsd.Criterion("attribute_disclosures", subset="nothing", at_most=0.0),))
    markup = release.judge(none)._repr_html_()
    assert 'class="verdict passed"' not in markup
    assert markup.count('class="verdict unjudged"') == 2
    assert "6px dashed #4a5563" in markup


def test_the_colours_are_the_reports():
    from bayessdc.report.html import STYLE

    for css, (background, border) in display.VERDICT_COLOURS.items():
        rule = re.search(rf"\.{css} \{{ background: (#\w+); border-left: ([^;]+); \}}", STYLE)
        assert rule is not None, css
        assert (background, border) == rule.groups()


def test_every_string_is_escaped_and_there_is_no_script(release):
    hostile = bsd.Policy(name="<script>alert('x')</script>", criteria=(
        bsd.Criterion("copied_records", statistic="worst", at_most=1.0, source="<b>&bold</b>"),))  # fmt: skip
    markup = release.judge(hostile)._repr_html_()
    assert "<script" not in markup and "<b>" not in markup
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in markup
    assert "&lt;b&gt;&amp;bold&lt;/b&gt;" in markup
    for shown in (release._repr_html_(), release.measured._repr_html_()):
        assert "<script" not in shown.lower() and "<style" not in shown.lower()  # inline styles, no JavaScript


def test_the_release_shows_synthesizer_m_gate_policy_and_headline_measures(release):
    markup = release._repr_html_()
    assert "cart synthesis: m = 2 synthetic datasets" in markup
    assert f"Gate: {release.diagnostics.verdict}" in markup
    assert html.escape(release.policy.sentence()) in markup
    assert release.policy._repr_html_() not in markup  # the verdict's markup reused, without its own outer box
    assert display.verdict_html(release.policy, release.policy_tried, box=False) in markup
    headline = [name for name, r in release.measured.items() if r.headline]
    assert headline
    for name in headline:
        assert f">{name}<" in markup
    not_headline = [name for name, r in release.measured.items() if not r.headline]
    assert not any(f">{name}<" in markup.split("Headline measures")[1] for name in not_headline)
    assert "inherent max" in markup  # the references of expected_match_risk
    for name in display.plot_names(release):
        assert name in markup  # the plots it has are named


def test_the_measures_show_their_summary(release):
    measured = release.measured
    markup = measured._repr_html_()
    summary = measured.summary()
    body = markup.split("<tbody>")[1]
    assert len(_rows(body)) == len(summary)
    for name in measured:
        assert f">{name}<" in markup
    assert "95% interval" in markup
    assert MeasureSet([])._repr_html_().count("No measures") == 1


def test_reprs_are_short(release):
    assert len(repr(release.policy)) < 300
    assert release.policy.sentence() in repr(release.policy)
    assert len(repr(release)) < 200
    assert len(repr(release.measured)) < 300
    assert repr(release.measured).startswith(f"<MeasureSet: {len(release.measured)} measures")
    judgement = release.policy.judgements[0]
    assert len(repr(judgement)) < 200 and judgement.criterion.measure in repr(judgement)


def test_every_plot_by_name_is_a_figure(release):
    names = display.plot_names(release)
    assert {"columns", "compare:education", "expected_match_risk", "risk_utility"} <= set(names)
    assert set(release.measured) <= set(names)
    for name in names:
        assert isinstance(release.plot(name), Figure), name
    with pytest.raises(ValueError, match="no plot named 'no such plot'.*columns, compare:education"):
        release.plot("no such plot")


def test_a_notebook_shows_the_release_and_its_verdict_as_html(release, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    for var, value in (("MPLBACKEND", "Agg"), ("OPENBLAS_NUM_THREADS", "1"), ("OMP_NUM_THREADS", "1")):
        monkeypatch.setenv(var, value)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(RELEASE_CODE.strip() + "\nrelease"),
        nbformat.v4.new_code_cell("release.policy"),
    ])  # fmt: skip
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    sentence = html.escape(release.policy.sentence())
    for cell, tag in zip(nb.cells, ("bayessdc-release", "bayessdc-verdict"), strict=True):
        results = [o for o in cell.outputs if o.get("output_type") == "execute_result"]
        assert len(results) == 1, cell.outputs
        data = results[0]["data"]
        assert "text/html" in data and tag in data["text/html"]
        assert sentence in data["text/html"]
        assert len(data["text/plain"]) < 300  # the short repr beside it
