import numpy as np
import pytest

from bayessdc.risk.proximity import proximity_shares, proximity_summary, relative_reduction


def test_band_shares_worked_by_hand():
    true = np.array([100.0, -50.0, 10.0])
    synthetic = np.array(
        [
            [105.0, -54.0, 30.0],  # within 10% of 100 (|5| <= 10); -54 within 10% of -50 (|4| <= 5); 30 no
            [111.0, -56.0, 10.5],  # 11 > 10 no; 6 > 5 no; 0.5 <= 1 yes
            [90.0, -50.0, 12.0],  # 10 <= 10 yes (boundary); 0 yes; 2 > 1 no
            [200.0, -45.0, 9.0],  # no; 5 <= 5 yes; 1 <= 1 yes
        ]
    )
    shares = proximity_shares(true, synthetic, relative=0.10, absolute=5.0)
    assert shares["within_band"].tolist() == [0.5, 0.75, 0.5]
    # absolute band 5: record 1: |5|,|11|,|10|,|100| -> 1/4; record 2: 4,6,0,5 -> 3/4; record 3: 20,.5,2,1 -> 3/4
    assert shares["within_absolute"].tolist() == [0.25, 0.75, 0.75]
    assert shares["mean_abs_error"].iloc[0] == pytest.approx((5 + 11 + 10 + 100) / 4)
    summary = proximity_summary(shares, [True, False, False])
    assert summary == {"at_risk": 0.5, "other": pytest.approx(0.625)}
    assert proximity_summary(shares, [False] * 3)["at_risk"] is None


def test_relative_reduction():
    before = {"at_risk": 0.8, "other": 0.5, "none": None}
    after = {"at_risk": 0.2, "other": 0.4, "none": 0.1}
    got = relative_reduction(before, after)
    assert got["at_risk"] == pytest.approx(0.75)
    assert got["other"] == pytest.approx(0.2)
    assert got["none"] is None


def test_shape_is_checked():
    with pytest.raises(ValueError, match="shape"):
        proximity_shares(np.zeros(3), np.zeros((2, 4)))
