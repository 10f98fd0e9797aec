"""Report 003's solution-count staged curriculum: the ranking, the stages and the pools they draw from."""

import numpy as np
import pytest

from countdown_study.countdown.difficulty import solution_counts
from countdown_study.countdown.generate import generate_tasks
from countdown_study.samplers import make_sampler
from countdown_study.samplers.solution_count import (
    PROGRESS,
    SolutionCountAdaptiveConfig,
    SolutionCountStagedConfig,
    easiest_first,
    stage_of,
)

POOL = generate_tasks(300, seed=3)


def test_ranking_puts_most_solutions_first_and_keeps_pool_order_in_ties():
    assert easiest_first(np.array([3, 75, 1, 75, 3])).tolist() == [1, 3, 0, 4, 2]


def test_stages_last_30_40_30_percent_of_the_run():
    assert [stage_of(s, 10, (0.3, 0.4, 0.3)) for s in range(12)] == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    assert [stage_of(s, 60, (0.3, 0.4, 0.3)) for s in (17, 18, 41, 42, 59)] == [0, 1, 1, 2, 2]


def test_each_stage_draws_from_the_easiest_share_of_the_pool():
    sampler = make_sampler("solution_count_staged", POOL, seed=1, total_steps=10)
    counts = solution_counts(POOL)
    rank = {int(i): r for r, i in enumerate(easiest_first(counts))}
    for step, share in ((0, 0.3), (3, 0.7), (9, 1.0)):
        batch = sampler.next_batch(step, 64)
        assert max(rank[i] for i in batch.indices) < round(share * len(POOL))
        assert set(batch.arms) == {f"easiest {round(100 * share)}%"}
    early = [i for s in range(3) for i in sampler.next_batch(s, 64).indices]
    assert np.mean(counts[early]) > np.mean(counts)  # the first stage trains on many-solution prompts
    again = make_sampler("solution_count_staged", POOL, seed=1, total_steps=10)
    assert again.next_batch(5, 16) == sampler.next_batch(5, 16)  # the same seed and step give the same batch


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"step_fractions": (0.5, 0.4, 0.3)}, "sum to 1"),
        ({"pool_fractions": (0.7, 0.3, 1.0)}, "pool_fractions"),
        ({"step_fractions": (0.5, 0.5)}, "one entry per stage"),
        ({"total_steps": 0}, "total_steps"),
    ],
)
def test_bad_schedules_are_refused_naming_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        SolutionCountStagedConfig(**changes)


def test_the_run_length_is_required():
    with pytest.raises(ValueError, match="total_steps"):
        make_sampler("solution_count_staged", POOL, seed=0)


def _observe(sampler, step, success, size=16):
    """Hand the sampler a batch whose share of correct samples is ``success`` (4 samples per prompt)."""
    from synthetic import grades_of

    batch = sampler.next_batch(step, size)
    correct = np.zeros((size, 4))
    correct.flat[: round(success * correct.size)] = 1.0
    sampler.observe(step, batch, grades_of(correct), np.zeros((size, 4)))
    return batch


def test_adaptive_frontier_moves_on_success_with_a_dwell():
    """Worked example: EMA 0.8, threshold 0.5, dwell 3. Success 0.75 from step 0: the EMA is 0.75 at once,
    the first move comes when three steps are seen (after step 2), the next three steps later."""
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1)
    shares = []
    for step in range(9):
        _observe(sampler, step, 0.75)
        shares.append(round(sampler.share, 2))
    assert shares == [0.3, 0.3, 0.4, 0.4, 0.4, 0.5, 0.5, 0.5, 0.6]
    low = make_sampler("solution_count_adaptive", POOL, seed=1)
    for step in range(9):
        _observe(low, step, 0.25)
    assert low.share == 0.3 and low.success_ema == pytest.approx(0.25)  # never moves below the threshold


def test_adaptive_draws_from_its_frontier_and_resumes():
    counts = solution_counts(POOL)
    rank = {int(i): r for r, i in enumerate(easiest_first(counts))}
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1, start_fraction=0.2, growth=0.5)
    for step in range(3):
        batch = _observe(sampler, step, 1.0)
        assert max(rank[i] for i in batch.indices) < 0.2 * len(POOL) and set(batch.arms) == {"easiest 20%"}
    assert sampler.share == pytest.approx(0.7) and sampler.stats()["frontier"] == pytest.approx(0.2)
    resumed = make_sampler("solution_count_adaptive", POOL, seed=1, start_fraction=0.2, growth=0.5)
    resumed.load_state_dict(sampler.state_dict())
    assert resumed.next_batch(3, 32) == sampler.next_batch(3, 32)
    assert max(rank[i] for i in sampler.next_batch(3, 256).indices) >= 0.2 * len(POOL)


def test_hybrid_never_falls_behind_the_staged_schedule():
    hybrid = make_sampler("solution_count_hybrid", POOL, seed=1, total_steps=10)
    for step in range(10):
        _observe(hybrid, step, 0.0)  # a policy that never succeeds: the staged clock alone moves it
        assert hybrid.frontier(step) == (0.3, 0.3, 0.3, 0.7, 0.7, 0.7, 0.7, 1.0, 1.0, 1.0)[step]
    fast = make_sampler("solution_count_hybrid", POOL, seed=1, total_steps=10, growth=0.3)
    for step in range(3):
        _observe(fast, step, 1.0)
    assert fast.frontier(3) == pytest.approx(0.7) and fast.frontier(2) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="hybrid solution-count curriculum needs the option total_steps"):
        make_sampler("solution_count_hybrid", POOL, seed=1)
    with pytest.raises(ValueError, match="threshold must be in"):
        make_sampler("solution_count_adaptive", POOL, seed=1, threshold=0.0)


# ---------------------------------------------------------------------------------------------------
# The progress rule (the study's adaptive and hybrid rows) against the threshold rule (their first runs)
# ---------------------------------------------------------------------------------------------------

SEARCH_TRACE = (
    29, 54, 48, 38, 50, 49, 42, 61, 63, 70, 52, 83, 82, 57, 51, 75, 62, 75, 65, 73, 76, 59, 68, 95, 80, 99, 95,
    95, 71, 87, 87, 93, 106, 96, 137, 88, 77, 96, 101, 98, 80, 94, 92, 92, 128, 95, 70, 107, 98, 129, 111,
    113, 97, 111, 94, 108, 117, 102, 118, 90,
)  # fmt: skip
"""Correct samples of 256 (32 prompts x 8) per step of a committed full-preset run: the search-style policy,
adaptive curriculum, seed 0 (rloo-235f1c2eca9d), whose success EMA rose to 0.42 under the threshold rule."""
EMBEDDED_TRACE = (
    51, 33, 45, 41, 44, 51, 53, 45, 47, 68, 35, 44, 54, 36, 48, 51, 57, 77, 43, 52, 32, 57, 68, 53, 84, 43, 48,
    75, 45, 53, 59, 64, 72, 53, 92, 64, 68, 82, 68, 75, 55, 75, 73, 55, 79, 71, 80, 63, 85, 56, 71, 64, 59, 89,
    71, 60, 67, 113, 77, 62,
)  # fmt: skip
"""The same for the embedded policy, seed 4 (rloo-c182658bca62): the slowest climb of the committed runs
(success EMA peak 0.30)."""


def _observe_count(sampler, step, correct, prompts=32, group=8):
    """Hand the sampler a batch of ``prompts`` x ``group`` samples of which ``correct`` verify."""
    from synthetic import grades_of

    batch = sampler.next_batch(step, prompts)
    rewards = np.zeros((prompts, group))
    rewards.flat[:correct] = 1.0
    sampler.observe(step, batch, grades_of(rewards), np.zeros((prompts, group)))
    return batch


def _widenings(sampler, trace):
    """The steps after which the adaptive share widened, over a success trace."""
    moves, share = [], sampler.share
    for step, correct in enumerate(trace):
        _observe_count(sampler, step, correct)
        if sampler.share > share:
            moves.append(step)
        share = sampler.share
    return moves


def test_progress_rule_widens_on_our_success_traces_where_the_threshold_never_did():
    """On the committed runs' traces (success EMA 0.1 -> 0.42 and 0.2 -> 0.30) the 0.5 threshold never fires;
    a gain of 0.04 since the last move widens the frontier six and two times in the 60 steps."""
    for trace, expected in ((SEARCH_TRACE, [4, 9, 12, 24, 27, 34]), (EMBEDDED_TRACE, [34, 57])):
        progress = make_sampler("solution_count_adaptive", POOL, seed=0, rule="progress")
        assert _widenings(progress, trace) == expected
        assert progress.share == pytest.approx(0.3 + 0.1 * len(expected))
        threshold = make_sampler("solution_count_adaptive", POOL, seed=0)  # the default: the first runs' rule
        assert _widenings(threshold, trace) == [] and threshold.share == 0.3
        assert max(threshold.success_ema, progress.success_ema) < 0.5


def test_progress_rule_worked_example_gain_is_measured_from_the_last_move():
    """EMA 0.8, gain 0.04, dwell 3. Success 0.5 at step 0 sets the EMA and the reference to 0.5; 0.75 from
    then on lifts the EMA to 0.55, 0.59 (gain 0.09 once three steps are seen: widen at step 2, reference
    0.59), 0.622, 0.6476 (gain 0.0576, but two steps since the move), 0.66808 (widen at step 5, reference
    0.66808), 0.684464 (gain 0.016: stay)."""
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1, rule="progress")
    shares = []
    for step, success in enumerate((0.5, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75)):
        _observe(sampler, step, success)
        shares.append(round(sampler.share, 2))
    assert shares == [0.3, 0.3, 0.4, 0.4, 0.4, 0.5, 0.5]
    assert sampler.reference == pytest.approx(0.66808)
    flat = make_sampler("solution_count_adaptive", POOL, seed=1, rule="progress")
    for step in range(20):
        _observe(flat, step, 0.75)  # a policy that does not improve never widens, however well it does
    assert flat.share == 0.3


def test_progress_hybrid_draws_other_prompts_than_staged_on_our_trace():
    staged = make_sampler("solution_count_staged", POOL, seed=2, total_steps=60)
    hybrids = {rule: make_sampler("solution_count_hybrid", POOL, seed=2, total_steps=60, rule=rule)
               for rule in ("progress", "threshold")}  # fmt: skip
    differs = {rule: [] for rule in hybrids}
    for step, correct in enumerate(SEARCH_TRACE):
        planned = staged.next_batch(step, 32).indices
        for rule, hybrid in hybrids.items():
            differs[rule].append(_observe_count(hybrid, step, correct).indices != planned)
    assert not any(differs["threshold"])  # the first rule: the staged curriculum, seed for seed
    ahead = [step for step, d in enumerate(differs["progress"]) if d]
    assert ahead[:3] == [5, 6, 7] and len(ahead) >= 10  # ahead of the clock from the first widening on


def test_progress_state_resumes_and_bad_rules_are_refused():
    sampler = make_sampler("solution_count_adaptive", POOL, seed=1, rule="progress")
    for step, correct in enumerate(SEARCH_TRACE[:20]):
        _observe_count(sampler, step, correct)
    resumed = make_sampler("solution_count_adaptive", POOL, seed=1, rule="progress")
    resumed.load_state_dict(sampler.state_dict())
    for step, correct in enumerate(SEARCH_TRACE[20:], start=20):
        assert _observe_count(resumed, step, correct) == _observe_count(sampler, step, correct)
    assert resumed.share == sampler.share and resumed.reference == sampler.reference
    with pytest.raises(ValueError, match="unknown frontier rule 'slow'"):
        make_sampler("solution_count_adaptive", POOL, seed=1, rule="slow")
    with pytest.raises(ValueError, match="gain must be in"):
        make_sampler("solution_count_adaptive", POOL, seed=1, rule="progress", gain=0.0)


def test_the_deviations_row_states_the_rule_the_rows_use():
    from countdown_study import study
    from countdown_study.reporting.deviations import deviations

    row = deviations("003").set_index("what").loc["adaptive and hybrid curricula"]
    config = SolutionCountAdaptiveConfig(**PROGRESS)
    assert (
        f"gained {config.gain}" in row["ours"] and f"widening by {round(100 * config.growth)}%" in row["ours"]
    )
    assert "'... (success EMA 0.5)'" in row["ours"] and SolutionCountAdaptiveConfig().threshold == 0.5
    assert [m.options for m in study.REPORT_003[2:4]] == [PROGRESS, PROGRESS]
    assert [m.options for m in study.REPORT_003_THRESHOLD] == [{}, {}]  # the configs of the first runs
