"""Evaluation: pass@k against enumeration, summaries of a hand-made table, grading, end to end."""

import argparse
import itertools
import json
from fractions import Fraction
from types import SimpleNamespace

import pandas as pd
import pytest

from countdown_study.cli import eval as cli_eval
from countdown_study.countdown.task import Task
from countdown_study.evaluation import evaluate as ev
from countdown_study.evaluation.evaluate import EVAL_SAMPLING, EvalResult
from countdown_study.evaluation.passk import pass_at_k, problem_table, summarize
from countdown_study.evaluation.samples import SAMPLE_COLUMNS, grade_samples
from countdown_study.rollout import Rollouts, SamplingConfig
from countdown_study.seeding import derive_seed

# ---------------------------------------------------------------------------------------------------
# pass@k
# ---------------------------------------------------------------------------------------------------


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> float:
    """Share of the k-subsets of n samples (the first c correct) holding a correct sample."""
    subsets = list(itertools.combinations(range(n), k))
    hits = sum(any(i < c for i in subset) for subset in subsets)
    return float(Fraction(hits, len(subsets)))


def test_pass_at_k_equals_enumeration():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == _pass_at_k_by_enumeration(n, c, k), (n, c, k)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (16, 1, 1, 1 / 16),  # pass@1 is c / n
        (16, 5, 1, 5 / 16),
        (4, 2, 2, 5 / 6),  # 1 - C(2,2)/C(4,2) = 1 - 1/6
        (16, 1, 16, 1.0),  # all samples drawn
        (16, 0, 8, 0.0),
        (16, 16, 3, 1.0),
        (200, 1, 100, 0.5),  # C(199,100)/C(200,100) = 1/2 exactly, despite 59-digit binomials
        (1000, 999, 2, 1.0),
    ],
)
def test_pass_at_k_known_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == expected


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [(4, 1, 5, "k=5 must lie in"), (4, 5, 1, "c=5 must lie in"), (0, 0, 1, "n >= 1"), (4, 1, 0, "k=0")],
)
def test_pass_at_k_errors(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)


# ---------------------------------------------------------------------------------------------------
# Summaries of a hand-made table
# ---------------------------------------------------------------------------------------------------


def _hand_table() -> pd.DataFrame:
    """Two problems x 4 samples. Problem 0 (3 numbers): 2 correct, 3 first-verifying. Problem 1 (4
    numbers): 0 correct, 1 first-verifying (an abandoned answer)."""
    rows = [
        # task, reward, correct, well_formed, spans, first-verifying
        (0, 1.0, True, True, 1, True),
        (0, 0.1, False, True, 2, True),  # abandons a correct answer
        (0, 0.0, False, False, 0, False),
        (0, 1.0, True, True, 1, True),
        (1, 0.1, False, True, 3, True),  # abandons a correct answer
        (1, 0.1, False, True, 1, False),
        (1, 0.1, False, True, 1, False),
        (1, 0.1, False, True, 1, False),
    ]
    table = pd.DataFrame(
        rows,
        columns=["task_index", "reward", "correct", "well_formed", "answer_spans", "first_verifying_correct"],
    )
    table["sample_index"] = [0, 1, 2, 3] * 2
    table["nums"] = [[1, 2, 3]] * 4 + [[1, 2, 3, 4]] * 4
    table["target"] = [6] * 4 + [24] * 4
    table["num_count"] = [3] * 4 + [4] * 4
    table["tier"] = ["T0"] * 4 + ["T1"] * 4
    return table


def test_summary_of_hand_table():
    s = summarize(_hand_table())
    assert s["n"] == 4 and s["num_tasks"] == 2 and s["samples"] == 8
    assert [key for key in s if key.startswith("pass@")] == ["pass@1", "pass@2", "pass@4"]
    assert s["pass@1"] == pytest.approx((2 / 4 + 0) / 2)
    assert s["pass@2"] == pytest.approx((5 / 6 + 0) / 2)
    assert s["pass@4"] == pytest.approx((1 + 0) / 2)
    # Problem 0: pass@1..4 = 1/2, 5/6, 1, 1; problem 1: all 0.
    assert s["avg_pass@k"] == pytest.approx((0.5 + 5 / 6 + 1 + 1) / 4 / 2)
    assert s["mean_score"] == pytest.approx(2.5 / 8)
    assert s["exact_rate"] == pytest.approx(2 / 8)
    assert s["well_formed"] == pytest.approx(7 / 8)
    # First verifying span counts: problem 0 has 3 of 4, problem 1 has 1 of 4.
    assert s["first_verifying"]["pass@1"] == pytest.approx((3 / 4 + 1 / 4) / 2)
    assert s["first_verifying"]["pass@2"] == pytest.approx((1.0 + (1 - 3 / 6)) / 2)
    assert s["first_verifying"]["pass@4"] == pytest.approx(1.0)
    assert s["abandoned_rate"] == pytest.approx(2 / 8)
    assert s["answer_spans_per_rollout"] == pytest.approx(10 / 8)


def test_summary_by_num_count_and_tier():
    s = summarize(_hand_table())
    assert set(s["by_num_count"]) == {"3", "4"}
    three, four = s["by_num_count"]["3"], s["by_num_count"]["4"]
    assert three["pass@1"] == pytest.approx(0.5) and three["pass@4"] == pytest.approx(1.0)
    assert three["mean_score"] == pytest.approx(2.1 / 4) and three["well_formed"] == pytest.approx(0.75)
    assert four["pass@1"] == 0.0 and four["mean_score"] == pytest.approx(0.1) and four["well_formed"] == 1.0
    assert s["by_tier"]["T0"] == three and s["by_tier"]["T1"] == four
    json.dumps(s)  # JSON-ready: plain Python numbers only


def test_summary_without_tier_or_diagnostic_columns():
    table = _hand_table().drop(columns=["tier", "answer_spans", "first_verifying_correct"])
    s = summarize(table)
    assert "by_tier" not in s and "first_verifying" not in s and "answer_spans_per_rollout" not in s
    assert s["pass@1"] == pytest.approx(0.25)


def test_summary_explicit_ks_and_errors():
    assert set(summarize(_hand_table(), ks=(3,))) >= {"pass@3"}
    with pytest.raises(ValueError, match="k=8 exceeds n=4"):
        summarize(_hand_table(), ks=(8,))
    with pytest.raises(ValueError, match="empty"):
        summarize(_hand_table().iloc[:0])
    with pytest.raises(ValueError, match="lacks columns"):
        summarize(_hand_table().drop(columns=["reward"]))


def test_problem_table_and_correct_counts():
    result = EvalResult.from_samples(_hand_table())
    problems = result.problems
    assert problems["task_index"].tolist() == [0, 1]
    assert problems["correct"].tolist() == [2, 0]
    assert problems["first_verifying_correct"].tolist() == [3, 1]
    assert problems["n"].tolist() == [4, 4]
    assert problems["pass@2"].tolist() == pytest.approx([5 / 6, 0.0])
    assert problems["mean_score"].tolist() == pytest.approx([2.1 / 4, 0.1])
    assert problems["nums"].tolist() == [[1, 2, 3], [1, 2, 3, 4]]
    assert problems["tier"].tolist() == ["T0", "T1"]
    assert result.correct_counts.tolist() == [2, 0]
    assert problem_table(_hand_table(), ks=(1,)).columns[-1] == "pass@1"


# ---------------------------------------------------------------------------------------------------
# Grading
# ---------------------------------------------------------------------------------------------------


def test_grade_samples_columns_and_verdicts():
    tasks = [Task((1, 2, 3), 6)]
    texts = [
        "<think>1+2=3</think><answer>1+2+3</answer>",  # correct
        "<answer>(1+2)*3</answer> no <answer>1*2*3</answer>",  # wrong then correct: final counts
        "<answer>1+2+3</answer> no <answer>3*3</answer>",  # correct then abandoned
        "<think>hmm",  # no answer
    ]
    table = grade_samples(tasks, texts, n=4, completion_tokens=[5, 6, 7, 8], finish_reasons=["eos"] * 4)
    assert list(table.columns) == list(SAMPLE_COLUMNS)
    assert table["sample_index"].tolist() == [0, 1, 2, 3]
    assert table["reward"].tolist() == [1.0, 1.0, 0.1, 0.0]
    assert table["correct"].tolist() == [True, True, False, False]
    assert table["well_formed"].tolist() == [True, True, True, False]
    assert table["reason"].tolist() == ["ok", "ok", "wrong_numbers", "no_answer"]
    assert table["answer_spans"].tolist() == [1, 2, 2, 0]
    assert table["first_verifying_correct"].tolist() == [True, True, True, False]
    assert table["first_correct_end"].tolist() == [
        len(texts[0]),
        len(texts[1]),
        len("<answer>1+2+3</answer>"),
        -1,
    ]
    assert table["completion_tokens"].tolist() == [5, 6, 7, 8]
    assert table["num_count"].tolist() == [3] * 4


def test_summary_reports_truncation_spans_and_first_verifying_pass1():
    tasks = [Task((1, 2, 3), 6)]
    texts = [
        "<answer>1+2+3</answer>",  # correct
        "<answer>(1+2)*3</answer> no <answer>1*2*3</answer>",  # wrong then correct
        "<answer>1+2+3</answer> no <answer>3*3</answer>",  # correct then abandoned
        "<think>hmm",  # cut by the token cap
    ]
    table = grade_samples(tasks, texts, n=4, finish_reasons=["eos", "eos", "eos", "length"])
    summary = summarize(table)
    assert summary["truncated"] == 0.25 and summary["answer_spans_per_rollout"] == 1.25
    assert summary["pass@1"] == 0.5 and summary["first_verifying_pass@1"] == 0.75
    assert "truncated" not in summarize(grade_samples(tasks, texts, n=4))  # finish reasons unknown


def test_grade_samples_tiers_and_length_errors():
    tasks = [Task((1, 2, 3), 6), Task((2, 3, 4, 5), 14)]
    table = grade_samples(tasks, ["x"] * 4, n=2, tiers=["T0", "T2"])
    assert table["tier"].tolist() == ["T0", "T0", "T2", "T2"]
    assert table["task_index"].tolist() == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="3 completions for 2 tasks x n=2"):
        grade_samples(tasks, ["x"] * 3, n=2)
    with pytest.raises(ValueError, match="1 tier labels for 2 tasks"):
        grade_samples(tasks, ["x"] * 4, n=2, tiers=["T0"])


# ---------------------------------------------------------------------------------------------------
# evaluate: wiring with a scripted sampler
# ---------------------------------------------------------------------------------------------------

TASKS = [Task((1, 2, 3), 6), Task((2, 3, 4, 5), 14), Task((3, 5, 7), 22)]


def test_evaluate_wiring_with_scripted_sampler(monkeypatch):
    calls = []

    def scripted(prompts, group_size, seed, config):
        calls.append((list(prompts), group_size, config, seed))
        texts = []
        for prompt in prompts:
            task = next(t for t in TASKS if ev.format_prompt(t.nums, t.target, "compact") == prompt)
            expr = "+".join(map(str, task.nums)) if task.target == sum(task.nums) else "1"
            texts += [f"<answer>{expr}</answer>"] + ["<answer>0</answer>"] * (group_size - 1)
        ids = [[7] * (i + 1) for i in range(len(texts))]
        return Rollouts(prompts, group_size, [[1]] * len(prompts), ids, texts, [], ["eos"] * len(texts))

    made = []
    monkeypatch.setattr(
        ev, "make_engine", lambda *args: made.append(args) or SimpleNamespace(sample=scripted)
    )
    model = SimpleNamespace(config=SimpleNamespace(countdown_prompt_template="compact"))
    result = ev.evaluate(model, None, TASKS, n=2, seed=5, batch_size=2, tiers=["T0", "T1", "T0"])
    assert len(made) == 1  # one engine for every batch
    assert [len(c[0]) for c in calls] == [2, 1]
    assert calls[0][0][0] == "N 1 2 3 T 6 :"
    assert [c[3] for c in calls] == [derive_seed(5, 0), derive_seed(5, 1)]
    assert all(c[1] == 2 and c[2] == EVAL_SAMPLING for c in calls)
    # Tasks 0 and 1 are solved by the sum (one sample of two); task 2 (22 != 15) is not.
    assert result.correct_counts.tolist() == [1, 1, 0]
    assert result.summary["pass@1"] == pytest.approx(1 / 3)
    assert result.summary["pass@2"] == pytest.approx(2 / 3)
    assert result.summary["by_tier"]["T1"]["pass@2"] == 1.0
    assert result.samples["completion_tokens"].tolist() == [1, 2, 3, 4, 1, 2]


def test_evaluate_errors():
    model = SimpleNamespace(config=SimpleNamespace(countdown_prompt_template="compact"))
    with pytest.raises(ValueError, match="task set is empty"):
        ev.evaluate(model, None, [], n=2)
    with pytest.raises(ValueError, match="n must be >= 1"):
        ev.evaluate(model, None, TASKS, n=0)


def test_batch_seed_depends_on_both_parts():
    seeds = {derive_seed(s, b) for s in range(3) for b in range(3)}
    assert len(seeds) == 9
    assert derive_seed(1, 2) == derive_seed(1, 2)


# ---------------------------------------------------------------------------------------------------
# evaluate end to end on a tiny random model, and the command line
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_policy():
    from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer

    tokenizer = build_tokenizer()
    cfg = TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    return build_model(tokenizer, cfg, seed=0).eval(), tokenizer


def test_evaluate_end_to_end_tiny_model(tiny_policy):
    model, tokenizer = tiny_policy
    sampling = SamplingConfig(max_new_tokens=12, temperature=1.0)
    result = ev.evaluate(model, tokenizer, TASKS, n=2, sampling=sampling, seed=0)
    samples = result.samples
    assert len(samples) == 6
    assert samples["task_index"].tolist() == [0, 0, 1, 1, 2, 2]
    assert samples["completion_tokens"].between(1, 12).all()
    assert set(samples["finish_reason"]) <= {"eos", "answer", "length"}
    assert set(samples["tier"]) <= {"T0", "T1", "T2", "T3"}
    summary = result.summary
    assert {"pass@1", "pass@2", "avg_pass@k", "mean_score", "well_formed"} <= set(summary)
    assert "pass@4" not in summary
    assert 0.0 <= summary["pass@1"] <= summary["pass@2"] <= 1.0
    again = ev.evaluate(model, tokenizer, TASKS, n=2, sampling=sampling, seed=0)
    pd.testing.assert_frame_equal(samples, again.samples)


def test_cli_writes_the_api_keys(tiny_policy, tmp_path):
    model, tokenizer = tiny_policy
    policy_dir = tmp_path / "policy"
    model.save_pretrained(policy_dir)
    tokenizer.save_pretrained(policy_dir)
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(
        "\n".join(json.dumps({"target": t.target, "nums": list(t.nums)}) for t in TASKS) + "\n"
    )
    out, table = tmp_path / "eval.json", tmp_path / "samples.parquet"
    parser = argparse.ArgumentParser()
    cli_eval.configure_parser(parser)
    argv = ["--policy", str(policy_dir), "--tasks", str(tasks_file), "--n", "2", "--seed", "1"]
    argv += [
        "--json",
        str(out),
        "--table",
        str(table),
        "--max-new-tokens",
        "8",
        "--top-k",
        "0",
        "--top-p",
        "1.0",
    ]
    assert cli_eval.cli_main(parser.parse_args(argv)) == 0
    written = json.loads(out.read_text())
    keys = {"pass@1", "pass@2", "mean_score", "well_formed"}
    assert keys <= set(written) and "pass@4" not in written
    assert set(written["by_num_count"]) == {"3", "4"}
    assert all(keys <= set(group) for group in written["by_num_count"].values())
    assert written["config"]["sampling"]["max_new_tokens"] == 8
    assert len(pd.read_parquet(table)) == 6
