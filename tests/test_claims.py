"""The claim registry's verdicts: categories on worked cases, floors, duplicates, rankings, metrics."""

import math

import numpy as np
import pandas as pd
import pytest

from countdown_study.study.claims import (
    ClaimPair,
    RegistryClaim,
    classify_interval,
    judge,
    load_registry,
    task_values,
    training_shares,
    verdict_counts,
)
from countdown_study.study.compare import compare

NAN = math.nan


@pytest.mark.parametrize(
    ("low", "high", "mde", "seeds", "sign", "effect", "expected"),
    [
        (0.01, 0.05, 0.02, 5, 1, 0.03, "holds"),  # clear of zero on the claimed side
        (-0.05, -0.01, 0.02, 5, 1, 0.03, "reversed"),  # clear of zero on the other side
        (-0.05, -0.01, 0.02, 5, -1, -0.03, "holds"),
        (-0.02, 0.0004, 0.02, 5, -1, -0.03, "borderline"),  # an end within 0.001 of zero
        (0.0009, 0.03, 0.02, 5, 1, 0.03, "borderline"),
        (-0.02, 0.02, 0.03, 5, 1, 0.01, "underpowered"),  # MDE 0.03 > the report's 0.01
        (-0.02, 0.02, 0.03, 5, 1, -0.05, "inside noise"),  # MDE 0.03 < |the report's effect| 0.05
        (-0.02, 0.02, 0.03, 5, 1, NAN, "inside noise"),  # no report effect: cannot be underpowered
        (0.01, 0.05, 0.02, 5, 0, 0.0, "reversed"),  # an equality claim contradicted
        (-0.01, 0.01, 0.02, 5, 0, 0.0, "inside noise"),  # an equality is never proven
        (0.01, 0.05, 0.02, 1, 1, 0.03, "one seed: no verdict"),
    ],
)
def test_classify_interval(low, high, mde, seeds, sign, effect, expected):
    assert classify_interval(low, high, mde, seeds, sign, effect) == expected


def claim(claim_id="000.x", kind="pair", sign=1, b=("B",), report_a=0.5, report_b=0.4, metric="pass@1"):
    return RegistryClaim(claim_id, "000", "Table 1", "s", kind, metric, "A", b, sign, report_a, report_b, "main",
                         "test", "")  # fmt: skip


def paired(a, b, name="B"):
    return ClaimPair(name, a, b, compare(a, b, n_resamples=100))


def test_identical_runs_are_counted_once_and_floors_are_untestable():
    rng = np.random.default_rng(0)
    a, b = rng.random((50, 5)), rng.random((50, 5))
    seen: dict[str, str] = {}
    first = judge(claim("000.first"), [paired(a, b)], seen)[0]
    assert first in ("inside noise", "underpowered")
    # the same per-task values under another claim's name: the same experiment
    assert judge(claim("000.again"), [paired(a.copy(), b.copy())], seen)[0] == "same runs as 000.first"
    # the same values at another sign is a different claim, not a duplicate
    assert not judge(claim("000.flip", sign=-1), [paired(a, b)], seen)[0].startswith("same runs")
    zeros = np.zeros((50, 5))
    verdict, _, why = judge(claim("000.floor"), [paired(zeros, zeros)], seen)
    assert verdict == "untestable" and "floor or ceiling" in why


def test_a_zero_claim_at_the_controls_floor_is_untestable():
    zeros = np.zeros((40, 5))
    some = zeros.copy()
    some[3, 2] = 0.0625
    zero_claim = claim(kind="zero", sign=-1, b=("RLOO uniform",), report_a=0.0, report_b=NAN)
    at_floor = ClaimPair("zero", zeros, zeros, compare(zeros, zeros, n_resamples=100), (zeros,))
    assert judge(zero_claim, [at_floor], {})[0] == "untestable"
    control_solves = ClaimPair("zero", zeros, zeros, compare(zeros, zeros, n_resamples=100), (some,))
    assert judge(zero_claim, [control_solves], {})[0] == "holds"  # the control shows the set is solvable


def test_a_ranking_holds_only_if_every_pair_does_and_shows_its_weakest_pair():
    rng = np.random.default_rng(1)
    base = rng.random((200, 5)) * 0.5
    noise = lambda: rng.normal(0, 0.01, (200, 5))  # noqa: E731
    a = base + 0.2
    far, near, above = base + noise(), base + 0.19 + noise(), base + 0.4 + noise()
    best = claim(kind="best", b=("far", "near"))
    verdict, shown, why = judge(best, [paired(a, far, "far"), paired(a, near, "near")], {})
    assert verdict == "holds" and shown.b == "near" and why == "all 2 pairs hold"
    verdict, shown, _ = judge(best, [paired(a, far, "far"), paired(a, above, "above")], {})
    assert verdict == "reversed" and shown.b == "above"
    one = [paired(a[:, :1], far[:, :1], "far"), paired(a[:, :1], near[:, :1], "near")]  # one training seed
    verdict, _, why = judge(best, one, {})
    assert verdict == "one seed: no verdict" and why == "2 pairs: one seed: no verdict 2"


def test_task_values_on_a_worked_example():
    # task 0: 2 of 4 correct; task 1: none correct, one answer parses (wrong numbers), three do not
    samples = pd.DataFrame(
        {
            "task_index": [0, 0, 0, 0, 1, 1, 1, 1],
            "num_count": 3,
            "target": 10,
            "correct": [True, True, False, False, False, False, False, False],
            "well_formed": True,
            "reward": [1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0],
            "reason": [
                "ok",
                "ok",
                "wrong_value",
                "syntax",
                "wrong_numbers",
                "syntax",
                "bad_char",
                "no_answer",
            ],
        }
    )
    assert task_values(samples, "pass@1").tolist() == [0.5, 0.0]
    assert task_values(samples, "exact_rate").tolist() == [0.5, 0.0]
    assert task_values(samples, "pass@2").tolist() == pytest.approx([1 - 1 / 6, 0.0])  # 1 - C(2,2)/C(4,2)
    # avg pass@k over k = 1..4 for c = 2 of n = 4: (1/2 + 5/6 + 1 + 1) / 4
    assert task_values(samples, "avg_pass@k").tolist() == pytest.approx([(0.5 + 5 / 6 + 1 + 1) / 4, 0.0])
    assert task_values(samples, "mean_score").tolist() == pytest.approx([0.55, 0.075])
    assert task_values(samples, "ood_exact_pass@16".replace("16", "4")).tolist() == [1.0, 0.0]
    # report 004's nonzero: an answer that parses (right or wrong), not merely the format score
    assert task_values(samples, "ood_nonzero_pass@16").tolist() == [1.0, 1.0]
    unparsed = samples.assign(reason=["syntax"] * 8)
    assert task_values(unparsed, "ood_nonzero_pass@16").tolist() == [0.0, 0.0]
    # the same credit over a whole study (notebook 07's Table 4 column): pass@4 of what parses
    from countdown_study.study import StudyResult, parseable_result, study_preset, summary_table

    study = StudyResult(study_preset("tiny"), pd.DataFrame(), samples.assign(method="m", seed=0),
                        pd.DataFrame(), ("m",))  # fmt: skip
    credited = parseable_result(study)
    assert credited.samples["correct"].tolist() == [True, True, True, False, True, False, False, False]
    assert study.samples["correct"].sum() == 2  # the result it was given is left as it was
    assert (
        task_values(credited.samples, "pass@4").tolist()
        == task_values(samples, "ood_nonzero_pass@16").tolist()
    )
    assert summary_table(credited)["pass@4"].tolist() == [1.0]
    with pytest.raises(ValueError, match="unknown metric 'pass@99'"):
        task_values(samples, "pass@99")
    sized = samples.assign(num_count=[3] * 4 + [4] * 4)  # the per-size metrics keep the tasks of one size
    assert task_values(sized, "pass@1 (3 numbers)").tolist() == [0.5]
    assert task_values(sized, "mean_score (4 numbers)").tolist() == pytest.approx([0.075])
    assert task_values(sized, "pass@2 (4 numbers)").tolist() == [0.0]
    with pytest.raises(ValueError, match="no evaluated task has 5 numbers"):
        task_values(sized, "pass@1 (5 numbers)")
    # report 003: a sample whose first verifying answer is correct, though its last is not, counts there
    abandoned = samples.assign(first_verifying_correct=[True, True, True, False, False, True, False, False])
    assert task_values(abandoned, "first_verifying_pass@1").tolist() == [0.75, 0.25]
    assert task_values(abandoned, "first_verifying_pass@1 - pass@1").tolist() == [0.25, 0.25]
    with pytest.raises(ValueError, match="no first_verifying_correct column"):
        task_values(samples, "first_verifying_pass@1")
    # the pass@k climb of each task: pass@4 - pass@1 = (1 - 0) - 1/2 on task 0, 0 on task 1
    assert task_values(samples, "pass@4 - pass@1").tolist() == [0.5, 0.0]
    assert task_values(sized, "pass@2 - pass@1 (3 numbers)").tolist() == pytest.approx([5 / 6 - 0.5])


def test_the_registry_loads_and_bad_rows_are_named(tmp_path):
    claims = load_registry()
    assert len(claims) == len({c.claim_id for c in claims}) >= 100
    bad = tmp_path / "claims.csv"
    table = pd.read_csv(load_registry.__defaults__[0], dtype=str, keep_default_na=False)
    table.loc[3, "kind"] = "bigger"
    table.to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"claims.csv:5: kind 'bigger'"):
        load_registry(bad)
    table = pd.read_csv(load_registry.__defaults__[0], dtype=str, keep_default_na=False)
    table.loc[1, "claim_id"] = table.loc[0, "claim_id"]
    table.to_csv(bad, index=False)
    with pytest.raises(ValueError, match="not unique"):
        load_registry(bad)


def test_verdict_counts_group_the_duplicates():
    table = pd.DataFrame({"verdict": ["holds", "same runs as 000.a", "same runs as 000.b", "not tested"]})
    assert verdict_counts(table) == {"holds": 1, "not tested": 1, "same runs": 2}


def test_a_runs_training_mix_is_read_from_its_observation_log_or_its_bucket_counts(tmp_path):
    """The 4-number share of the drawn training prompts, one value per run: from a sampler's observation log
    (batch rows index the training pool; probe rows are left out) or a fixed curriculum's bucket counts."""
    from countdown_study.study.claims import pool_flags
    from countdown_study.study.methods import StudyResult, training_pool
    from countdown_study.study.presets import study_preset

    preset = study_preset("tiny", seeds=(0, 1))
    four = np.array([len(task.nums) == 4 for task in training_pool(preset)])
    flags = pool_flags(preset.run_data)
    assert (flags["four"] == four).all() and len(flags["deep"]) == len(four)
    threes, fours = np.flatnonzero(~four)[:3], np.flatnonzero(four)[:3]
    runs = []
    for seed, drawn in ((0, [*threes, fours[0]]), (1, [*fours, threes[0], fours[1]])):
        folder = tmp_path / f"fsc{seed}" / "tables"
        folder.mkdir(parents=True)
        log = pd.DataFrame({"step": 0, "source": ["batch"] * len(drawn) + ["probe"] * 2,
                            "task_index": [*drawn, *fours[:2]]})  # fmt: skip
        log.to_parquet(folder / "sampler_observations.parquet")
        runs.append({"method": "fsc", "seed": seed, "path": str(folder.parent)})
        runs.append({"method": "fixed", "seed": seed, "path": str(tmp_path / "none")})
    steps = pd.DataFrame(
        {"method": "fixed", "seed": [0, 0, 1, 1], "step": [0, 1, 0, 1],
         "batch_3": [4.0, 1.0, 4.0, 2.0], "batch_4": [NAN, 3.0, NAN, 2.0]}  # before the unlock: no 4s
    )  # fmt: skip
    result = StudyResult(preset, pd.DataFrame(runs), pd.DataFrame(), steps, ("fsc", "fixed", "uniform"))
    assert training_shares(result, "fsc").tolist() == [0.25, 0.8]  # 1 of 4; 4 of 5 (repeats count)
    assert training_shares(result, "fixed").tolist() == [3 / 8, 2 / 8]
    # inside the 4-number draws only: seed 0 drew fours[0]; seed 1 fours[0..2] and fours[1] again
    required = flags["all_numbers_required"]
    expected = [float(required[fours[0]]), float(required[[*fours, fours[1]]].mean())]
    assert training_shares(result, "fsc", "train all-numbers-required share (4 numbers)").tolist() == expected
    with pytest.raises(ValueError, match="do not log their drawn prompts' train deep-expression share"):
        training_shares(result, "fixed", "train deep-expression share (4 numbers)")
    uniform = pd.DataFrame([{"method": "uniform", "seed": s, "path": str(tmp_path / "none")} for s in (0, 1)])
    no_log = StudyResult(preset, uniform, pd.DataFrame(), pd.DataFrame(), ("uniform",))
    with pytest.raises(
        ValueError, match="the runs of 'uniform' do not log their drawn prompts' training 4-number share"
    ):
        training_shares(no_log, "uniform")
