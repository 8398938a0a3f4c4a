"""Write a SYNTHETIC German-credit-like file of applicants, one row per applicant (seeded).

This is not the UCI Statlog (German credit) data: it imitates its layout and rough margins
(sex, housing, saving accounts with "NA" for none on file, risk good/bad) so that a record-level
spec can be tried without a download. The risk depends on savings and housing (logistic), and
no woman living free of charge has rich savings: one combination of the 30 has no applicant,
as in the real data.

    python specs/data/make_credit_records.py            # specs/data/credit_records.csv (1,000)
    python specs/data/make_credit_records.py N OUT.csv  # N applicants (benchmarks/bench_records.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

SEX = (["male", "female"], [0.69, 0.31])
HOUSING = (["own", "rent", "free"], [0.71, 0.18, 0.11])
SAVING = (["NA", "little", "moderate", "quite rich", "rich"], [0.18, 0.60, 0.10, 0.07, 0.05])
LOGIT = {"NA": 1.6, "little": 0.5, "moderate": 0.9, "quite rich": 1.8, "rich": 1.5}  # log-odds of good
HOUSING_SHIFT = {"own": 0.3, "rent": -0.3, "free": -0.4}


def make(n: int, seed: int = 19) -> pd.DataFrame:
    """``n`` applicants: sex, housing, saving, risk, plus age and amount (columns a spec ignores)."""
    rng = np.random.default_rng(seed)
    sex = np.array(SEX[0])[rng.choice(2, n, p=SEX[1])]
    housing = np.array(HOUSING[0])[rng.choice(3, n, p=HOUSING[1])]
    saving = np.array(SAVING[0], dtype=object)[rng.choice(5, n, p=SAVING[1])]
    gap = (sex == "female") & (housing == "free") & (saving == "rich")
    saving[gap] = "quite rich"  # the combination without applicants
    logit = pd.Series(saving).map(LOGIT).to_numpy() + pd.Series(housing).map(HOUSING_SHIFT).to_numpy()
    good = rng.random(n) < 1.0 / (1.0 + np.exp(-logit))
    return pd.DataFrame(
        {
            "age": rng.integers(19, 75, n),
            "sex": sex,
            "housing": housing,
            "saving": saving,
            "amount": rng.integers(250, 18_500, n),
            "risk": np.where(good, "good", "bad"),
        }
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).with_name("credit_records.csv")
    make(n).to_csv(out, index=False)
