"""``bsd.synthesize(..., weights=, replicate_weights=)``: the replicate weights carried with the kept weights into
every dataset, described in model.json, used for the analyst's variances, and refused where they cannot be
carried."""

import numpy as np
import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.measures import MeasureInput
from bayessdc.measures.regression import IntervalOverlap, RegressionInput
from bayessdc.synthesis.regression import regression_utility
from bayessdc.synthesis.replicates import replicate_variance
from bayessdc.synthesis.survey import combined_weighted_mean, replicate_weighted_mean

R = 4
COLUMNS = tuple(f"rep{r + 1}" for r in range(R))


def _survey(n: int = 240, seed: int = 5) -> pd.DataFrame:
    persons = bsd.examples.acs_persons(n, seed=seed)
    rng = np.random.default_rng(seed)
    persons["income"] = np.round(1000 + 40 * persons["age"] + rng.normal(0, 300, n), 0)
    persons["wt"] = np.round(rng.uniform(50, 150, n), 1)
    for column in COLUMNS:  # successive-difference-like replicate factors 0.3 / 1.7
        persons[column] = np.round(persons["wt"] * rng.choice([0.3, 1.7], n), 2)
    return persons[["age", "sex", "income", "wt", *COLUMNS]]


@pytest.fixture(scope="module")
def release():
    data = _survey()
    design = bsd.ReplicateDesign(COLUMNS, method="sdr")
    # every record's replicate weights in every dataset, row for row: a policy that removes no row (the default
    # removes the replicated uniques of a CART release; tests/pipeline/test_weights.py follows that case)
    rows_kept = bsd.Policy(name="every row kept: the replicate weights' test", criteria=())
    out = bsd.synthesize(data, bsd.CART(bootstrap=20), synthesize="income", keep="age,sex", m=2, seed=1,
                         progress=False, weights="wt", replicate_weights=design, policy=rows_kept)  # fmt: skip
    return data, design, out


def test_every_dataset_carries_each_records_replicate_weights_and_model_json_says_so(release):
    data, design, out = release
    for _, dataset in out.synthetic.groupby("synthetic"):
        assert np.array_equal(dataset[list(COLUMNS)].to_numpy(), data[list(COLUMNS)].to_numpy())
        assert np.array_equal(dataset["wt"].to_numpy(), data["wt"].to_numpy())
    described = out.description["weights"]["replicates"]
    assert described["columns"] == list(COLUMNS) and described["method"] == "sdr" and described["factor"] == 1.0
    assert out.identity["weights"]["replicates"]["columns"] == list(COLUMNS)
    assert not any(c in str(out.description.get("predictors", "")) for c in COLUMNS)  # no tree reads them


def test_the_analysts_variances_are_the_replicate_variances_of_each_dataset(release):
    data, design, out = release
    table = regression_utility(data, out.synthetic, "income", ["age"], weights="wt", replicates=design)
    # each dataset's variance by hand: 4/R sum_r (beta_r - beta)^2 with WLS on the replicate weights
    import statsmodels.api as sm

    def slope(frame, w):
        return np.asarray(sm.WLS(frame["income"], sm.add_constant(frame["age"]), weights=w).fit().params)

    variances = [replicate_variance(slope, d, "wt", design)[1][1, 1] for _, d in out.synthetic.groupby("synthetic")]
    estimates = [replicate_variance(slope, d, "wt", design)[0][1] for _, d in out.synthetic.groupby("synthetic")]
    u_bar, b = np.mean(variances), np.var(estimates, ddof=1)
    assert table.loc["age", "estimate"] == pytest.approx(np.mean(estimates))
    assert table.loc["age", "total_variance"] == pytest.approx(u_bar + b / 2)  # Reiter's partial rules, m = 2
    # the regression measure reads the weights and the replicate design of the release's measure input
    regression = RegressionInput(data, out.synthetic, "income", ["age"])
    figures = IntervalOverlap().compute(MeasureInput(out.synthetic, data, regression=regression, weights="wt",
                                                     replicates=design))  # fmt: skip
    assert regression.replicates == design and len(figures.values) == 2
    mean = combined_weighted_mean(out.synthetic, "income", "wt", replicates=design)
    by_hand = [replicate_weighted_mean(d, "income", "wt", design) for _, d in out.synthetic.groupby("synthetic")]
    assert mean.loc["income", "estimate"] == pytest.approx(np.mean([q for q, _ in by_hand]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: {"weights": None}, "needs weights="),
        (lambda d: {"keep": []}, "fully synthetic release synthesizes the weights"),
        (lambda d: {"keep": "age,sex,rep1"}, "rep1 listed to keep or synthesize"),
        (lambda d: {"data": d.assign(rep2=d["rep2"].where(d.index != 7))}, r"'rep2'.*data row 8"),
        (lambda d: {"data": d.drop(columns="rep4")}, "not in the data: rep4"),
        (lambda d: {"design": ["rep1", "rep2"]}, "takes a bsd.ReplicateDesign"),
    ],
)
def test_replicate_weights_that_cannot_be_carried_are_refused_before_fitting(change, message, tmp_path):
    data = _survey(60)
    args = {"data": data, "weights": "wt", "keep": "age,sex", "design": bsd.ReplicateDesign(COLUMNS, method="sdr")}
    args.update(change(data))
    with pytest.raises(bsd.InputError, match=message):
        bsd.synthesize(args["data"], bsd.CART(bootstrap=5), synthesize="income", keep=args["keep"], m=2, seed=0,
                       progress=False, weights=args["weights"], replicate_weights=args["design"], out=tmp_path / "o")
    assert not (tmp_path / "o").exists()
