"""Golden numbers: the tiny study preset at seed 0 and one thread gives exactly these results.

A refactor that changes behaviour (seeds, sampling, grading, the update, the sampler's draws) changes
them. The numbers were measured on the embedded checkpoint at the commit that introduced this test;
change them only together with a deliberate change of behaviour, and say so in the commit.
"""

import pytest

from countdown_study import study

GOLDEN = {
    # method: (per-step (reward_mean, exact_rate) of the RLOO step log, eval pass@1, eval mean score)
    "SFT": ((), 0.3125, 0.3677083333333333),
    "RLOO uniform": (((0.2, 0.125), (0.19375, 0.125)), 0.3229166666666667, 0.3802083333333333),
    "Adaptive v1 (mean reward)": (((0.2, 0.125), (0.60625, 0.5625)), 0.3020833333333333, 0.36041666666666666),
    "IPO": ((), 0.3125, 0.37083333333333335),
}


@pytest.mark.parametrize(
    "method", [study.SFT, study.UNIFORM, study.REPORT_000_ABLATIONS[0], study.IPO], ids=lambda m: m.name
)
def test_tiny_preset_gives_the_pinned_numbers(method, tmp_path):
    preset = study.study_preset("tiny")
    assert preset.threads == 1 and preset.seeds == (0,)
    store = study.run_method(method, preset, seed=0, root=tmp_path, progress=False)
    steps, pass1, mean_score = GOLDEN[method.name]
    log = [v for r in store.read_steps() if "reward_mean" in r for v in (r["reward_mean"], r["exact_rate"])]
    assert log == pytest.approx([v for pair in steps for v in pair], abs=1e-12)
    summary = store.load_results()["eval"]
    assert summary["pass@1"] == pytest.approx(pass1, abs=1e-12)
    assert summary["mean_score"] == pytest.approx(mean_score, abs=1e-12)
