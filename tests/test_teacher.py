"""Report 004's teacher generator (``training.teacher``), its text (``training.teacher_data``) and the
shipped task proposer (``checkpoints/teacher``)."""

import json
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from countdown_study.countdown import Task, generate_tasks, solution_count
from countdown_study.countdown.synthetic import RuleBasedGenerator
from countdown_study.policy import TinyModelConfig, build_model, build_tokenizer, policy_identity
from countdown_study.reporting.deviations import deviations
from countdown_study.rollout import SamplingConfig
from countdown_study.runs.store import run_id
from countdown_study.training.loop import TrainConfig, run_identity, train
from countdown_study.training.specs import NEVER_EVALUATED, DataSpec, EvalSpec
from countdown_study.training.teacher import (
    SHIPPED_TEACHER,
    TEACHER_CHECKPOINT_DIR,
    TeacherGenerator,
    load_teacher,
    sampler_models,
)
from countdown_study.training.teacher_data import (
    TEACHER_REASONS,
    TEACHER_TIERS,
    compact_prompt,
    compare_generators,
    parse_proposal,
    solution_work,
    task_text,
    teacher_prompt,
)
from countdown_study.training.teacher_train import (
    ACCEPTANCE_GOAL,
    PROPOSALS,
    QUALITY_COLUMNS,
    shipped_info,
    teacher_quality,
)

POOL = generate_tasks(200, 0)
POOL_KEYS = [task.key for task in POOL]
SHIPPED_ACCEPTANCE = 0.44
"""The overall acceptance the shipped teacher reached (``teacher.json``: 0.445), rounded down; below the
0.5 goal (``ACCEPTANCE_GOAL``) on the 4-number tiers, whose merges' arithmetic still slips (T2 0.35, T3
0.25; T0 0.62, T1 0.56)."""


@pytest.fixture(scope="module")
def untrained():
    """A random proposer: the generator's checks do not depend on the model."""
    tokenizer = build_tokenizer()
    model = build_model(
        tokenizer, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    )
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def shipped():
    return load_teacher("teacher")


# ---------------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------------


def test_prompts_spell_out_the_tier_rules():
    assert compact_prompt("T0") == "T0 N 3 T 10:50 :"
    assert compact_prompt("T1") == "T1 N 3 T 51:300 , N 4 T 10:75 :"
    assert compact_prompt("T2") == "T2 N 4 T 76:150 :"
    assert compact_prompt("T3") == "T3 N 4 T 151:300 , N 4 T 10:150 :"
    words = teacher_prompt("T2", "qwen_chat")
    assert words.startswith("<|im_start|>user\n") and words.endswith("<|im_start|>assistant\n")
    assert (
        "4 numbers from 1 to 99 and a target from 76 to 150 that has more than 2 distinct solutions" in words
    )
    with pytest.raises(ValueError, match="unknown teacher tier 'OOD'"):
        compact_prompt("OOD")


PARSES = [
    # (model output, (numbers, target) or None)
    ("N 12 5 33 7 T 64", ((12, 5, 33, 7), 64)),  # the proposer's notation
    ("N 4 6 9 : 4+6=10, 10+9=19 T 19", ((4, 6, 9), 19)),  # scratch work is skipped
    ("Sure! N 4 6 9 T 19\nN 1 2 3 T 6", ((4, 6, 9), 19)),  # the first task of a chatty answer
    ("N 4 6 9 T 9.5", ((4, 6, 9), Fraction(19, 2))),  # a non-integer target, kept exact
    ("N 4 6 9 T 3/4", ((4, 6, 9), Fraction(3, 4))),
    ("N 4 6 9 T 1/0", None),  # no number
    ("the numbers are 4, 6 and 9", None),  # garbage
    ("N 4 6 9", None),  # no target
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), PARSES, ids=[p[0] or "empty" for p in PARSES])
def test_parse_proposal(text, expected):
    parsed = parse_proposal(text)
    if expected is None:
        assert parsed is None
    else:
        assert parsed == (tuple(Fraction(n) for n in expected[0]), Fraction(expected[1]))


def test_training_text_parses_back_to_its_task():
    for task in POOL[:20]:
        text = task_text(task.nums, task.target, solution_work(task))
        assert parse_proposal(text) == (tuple(map(Fraction, task.nums)), Fraction(task.target))
    assert task_text((44, 19, 35), 98) == "N 44 19 35 T 98"


# ---------------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------------

POOL_TASK = POOL[0]
CHECKS = [
    # (tier, model output, outcome)
    ("T0", "N 4 6 9 T 19", "accepted"),
    ("T0", "N 4 6 9 : 4+6=10, 10+9=19 T 19", "accepted"),
    ("T0", "garbage", "unparsed"),
    ("T0", "N 4 6 9 8 T 19", "wrong_count"),  # T0 is 3 numbers
    ("T2", "N 4 6 9 T 19", "wrong_count"),  # T2 is 4 numbers
    ("T0", "N 4 6.5 9 T 19", "non_integer"),
    ("T0", "N 4 6 9 T 9.5", "non_integer"),
    ("T0", "N 4 6 120 T 19", "out_of_range"),  # numbers are 1..99
    ("T0", "N 4 6 9 T 5", "out_of_range"),  # targets are 10..300
    ("T0", "N 1 1 1 T 50", "unsolvable"),
    ("T0", "N 20 30 40 T 90", "wrong_tier"),  # 3 numbers above 50: T1
    ("T1", "N 20 30 40 T 90", "accepted"),
    (
        "T0" if POOL_TASK.target <= 50 and POOL_TASK.num_count == 3 else "T1",
        task_text(POOL_TASK.nums, POOL_TASK.target),
        "seen",
    ),
]


@pytest.mark.parametrize(("tier", "text", "reason"), CHECKS, ids=[f"{c[0]} {c[1]}" for c in CHECKS])
def test_each_output_gets_its_first_failed_check(untrained, tier, text, reason):
    generator = TeacherGenerator(*untrained, seen_keys=POOL_KEYS)
    row = generator.check(tier, text)
    assert row["reason"] == reason and row["accepted"] == (reason == "accepted")
    assert row["source"] == "teacher" and row["tier"] == tier and row["text"] == text
    assert reason in TEACHER_REASONS


def test_parsed_outputs_go_through_the_rule_based_checks(untrained):
    """Every output that parses into integer numbers of the tier's count gets the rule-based
    generator's verdict (same checks, same seen set)."""
    rng = np.random.default_rng(0)
    teacher = TeacherGenerator(*untrained, seen_keys=POOL_KEYS)
    rules = RuleBasedGenerator(seen_keys=POOL_KEYS)
    outcomes = set()
    shifted = [(task, task.target + int(rng.integers(-3, 4))) for task in generate_tasks(60, 5)]
    for task, target in [*((task, task.target) for task in POOL[:20]), *shifted]:  # pool tasks: seen
        tier = "T0" if task.num_count == 3 else "T2"
        row = teacher.check(tier, task_text(task.nums, target))
        assert row["reason"] == rules.check(tier, task.nums, Fraction(target))
        outcomes.add(row["reason"])
    assert {"accepted", "seen", "unsolvable", "wrong_tier"} <= outcomes


def test_accepted_tasks_are_not_accepted_again_in_the_run(shipped):
    generator = TeacherGenerator(*shipped, seen_keys=POOL_KEYS)
    tasks, _ = generator.propose("T0", 5, np.random.default_rng(0))
    for task in tasks:  # the same task again, its numbers in another order: seen earlier in the run
        assert generator.check("T0", task_text(task.nums[::-1], task.target))["reason"] == "seen"


# ---------------------------------------------------------------------------------------------------
# Proposals: seeded, resumable
# ---------------------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_proposals(shipped):
    first = TeacherGenerator(*shipped, seen_keys=POOL_KEYS).propose("T1", 6, np.random.default_rng(3))
    again = TeacherGenerator(*shipped, seen_keys=POOL_KEYS).propose("T1", 6, np.random.default_rng(3))
    other = TeacherGenerator(*shipped, seen_keys=POOL_KEYS).propose("T1", 6, np.random.default_rng(4))
    assert first == again and first[0] != other[0]
    tasks, rows = first
    assert len(tasks) == 6 == sum(r["accepted"] for r in rows)
    assert len({t.key for t in tasks}) == 6 and not {t.key for t in tasks} & set(POOL_KEYS)


def test_state_round_trip_resumes_to_the_same_proposals(shipped):
    original = TeacherGenerator(*shipped, seen_keys=POOL_KEYS)
    original.propose("T0", 5, np.random.default_rng(1))
    state = json.loads(json.dumps(original.state_dict()))
    resumed = TeacherGenerator(*shipped, seen_keys=POOL_KEYS)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state and resumed.rules.seen == original.rules.seen
    assert resumed.propose("T0", 5, np.random.default_rng(2)) == original.propose(
        "T0", 5, np.random.default_rng(2)
    )
    with pytest.raises(ValueError, match="unknown outcomes"):
        resumed.load_state_dict({"accepted_keys": [], "counts": {"T0": {"division_by_zero": 1}}})


def test_a_starved_request_fails_naming_the_tier(untrained):
    from countdown_study.training.teacher import TeacherConfig

    generator = TeacherGenerator(
        *untrained, TeacherConfig(batch=8, max_attempts_per_task=2), seen_keys=POOL_KEYS
    )
    with pytest.raises(ValueError, match=r"tier T3: only 0 of 1 teacher tasks accepted after 8 outputs"):
        generator.propose("T3", 1, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------------------
# The shipped teacher and its comparison with the rule-based generator
# ---------------------------------------------------------------------------------------------------


def test_the_shipped_teacher_records_its_acceptance():
    info = shipped_info()
    measured = info["measured"]
    assert measured["measured_with"]["proposals_per_tier"] == PROPOSALS >= 500
    assert measured["acceptance"]["overall"] >= SHIPPED_ACCEPTANCE
    assert measured["goal"] == ACCEPTANCE_GOAL
    assert set(measured["comparison"]) == {"T0", "T1", "T2", "T3"}
    for tier, compared in measured["comparison"].items():
        assert compared["teacher"]["proposals"] >= 500
        assert compared["teacher"]["acceptance"] == pytest.approx(measured["acceptance"][tier])
    assert info["parameters"] < 4_000_000 and info["config"]["threads"] == 1
    assert info["config"]["init_from"] == "embedded"


def row(tier, nums, target, reason):
    return {
        "tier": tier,
        "nums": list(nums),
        "target": target,
        "reason": reason,
        "accepted": reason == "accepted",
    }


def test_compare_generators_on_hand_written_logs():
    pool_task = POOL[0]
    teacher = [
        row("T0", (4, 6, 9), 19, "accepted"),
        row("T0", (2, 5, 7), 35, "accepted"),
        row("T0", pool_task.nums, pool_task.target, "seen"),
        row("T0", (), None, "unparsed"),
    ]
    rules = [row("T0", (4, 6, 9), 10, "accepted"), row("T0", (1, 2, 3), None, "non_integer")]
    compared = compare_generators(teacher, rules, POOL_KEYS)["T0"]
    assert compared["teacher"]["acceptance"] == 0.5 and compared["teacher"]["pool_duplicates"] == 0.25
    assert compared["teacher"]["outcomes"] == {"accepted": 0.5, "seen": 0.25, "unparsed": 0.25}
    assert compared["teacher"]["target_mean"] == 27.0 and compared["teacher"]["three_number_share"] == 1.0
    assert compared["rule_based"]["acceptance"] == 0.5 and compared["rule_based"]["pool_duplicates"] == 0.0
    # teacher targets 19 and 35 fall in bins [0, 25) and [25, 50); rule-based 10 in [0, 25): TV = 0.5
    assert compared["target_tv_distance"] == 0.5


def test_teacher_quality_puts_the_proposals_beside_the_pool():
    """Hand-written measurement and pools: the teacher and rule-based rows are the measurement's, the pool
    rows the tasks' own distribution (every task counted as accepted, none checked)."""
    summary = {"proposals": 8, "acceptance": 0.25, "outcomes": {"accepted": 0.25, "unsolvable": 0.5, "wrong_tier": 0.25},
               "accepted": 2, "target_quantiles": [12.0, 20.0, 28.0], "number_mean": 5.0, "numbers_below_10": 0.5,
               "three_number_share": 1.0, "solutions_median": 3.0}  # fmt: skip
    info = {
        "measured": {"comparison": {t: {"teacher": summary, "rule_based": summary} for t in TEACHER_TIERS}}
    }
    pool = [Task((1, 2, 3), 6), Task((2, 3, 4), 24), Task((10, 20, 30), 60)]
    table = teacher_quality(info, {t: pool for t in TEACHER_TIERS})
    assert list(table.columns) == list(QUALITY_COLUMNS) and len(table) == 12
    teacher = table[(table.tier == "T1") & (table.source == "teacher")].iloc[0]
    assert (teacher.acceptance, teacher.unsolvable, teacher.target_median) == (0.25, 0.5, 20.0)
    pool_row = table[(table.tier == "T1") & (table.source == "pool")].iloc[0]
    assert pool_row.proposals == pool_row.accepted == 3 and np.isnan(pool_row.acceptance)
    assert pool_row.target_median == 24.0 and pool_row.number_mean == pytest.approx(75 / 9)
    assert pool_row.numbers_below_10 == pytest.approx(6 / 9) and pool_row.three_number_share == 1.0
    counts = [solution_count(t.nums, t.target, cap=128) for t in pool]
    assert pool_row.solutions_median == float(np.median(counts))
    with pytest.raises(ValueError, match="no measurement"):
        teacher_quality({"measured": None}, {t: pool for t in TEACHER_TIERS})


def test_the_shipped_teachers_accepted_targets_follow_the_pool():
    """What the shipped teacher is: an imitator of the pool. Its accepted targets sit at the pool's (T3 median
    56 against the rule-based generator's 199) and its 90% quantiles stay by the pool's ceiling of 100."""
    table = teacher_quality().set_index(["tier", "source"])
    for tier in ("T0", "T1", "T3"):
        assert (
            abs(table.loc[(tier, "teacher"), "target_median"] - table.loc[(tier, "pool"), "target_median"])
            <= 5
        )
    assert table.loc[("T3", "rule_based"), "target_median"] > 150
    assert (table.xs("teacher", level="source")["target_q90"] <= 110).all()
    acceptance = shipped_info()["measured"]["acceptance"]
    assert table.xs("teacher", level="source")["acceptance"].to_dict() == {
        t: acceptance[t] for t in TEACHER_TIERS
    }


def test_the_deviations_row_says_what_the_teacher_is_and_is_not():
    row = deviations("004").set_index("what").loc["teacher"]
    acceptance = shipped_info()["measured"]["acceptance"]
    assert all(f"{tier} {acceptance[tier]:.2f}" in row["ours"] for tier in TEACHER_TIERS)
    assert f"{acceptance['overall']:.3f} overall" in row["ours"] and "not an instructed LM" in row["ours"]
    assert "Qwen3-8B" in row["report's value"] and "teacher_quality" in row["where set"]


# ---------------------------------------------------------------------------------------------------
# The run id covers the teacher
# ---------------------------------------------------------------------------------------------------


def test_a_changed_teacher_changes_the_run_id(tmp_path):
    folder = tmp_path / "teacher"
    shutil.copytree(TEACHER_CHECKPOINT_DIR, folder)
    config = TrainConfig(sampler="adsc_teacher", sampler_options={"teacher": str(folder)})
    shipped = TrainConfig(sampler="adsc_teacher")
    assert run_identity(config)["teacher"] == run_identity(shipped)["teacher"]  # the same weights
    before = run_id(config, identity=run_identity(config))

    weights = load_file(folder / "model.safetensors")  # the teacher retrained, under the same name
    name = sorted(weights)[0]
    weights[name] = weights[name] + 1e-3
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    changed = run_identity(config)
    assert (
        changed["policy"] == run_identity(shipped)["policy"]
        and changed["teacher"] != run_identity(shipped)["teacher"]
    )
    assert run_id(config, identity=changed) != before


@pytest.mark.parametrize("sampler", ["uniform", "adsc_real_only", "solution_count_hybrid"])
def test_runs_without_a_teacher_keep_their_identity(sampler):
    config = TrainConfig(sampler=sampler)
    assert run_identity(config) == policy_identity(config.data.policy)  # as every committed run was named
    assert sampler_models(sampler, {"teacher": "somewhere"}) == {}


@pytest.mark.parametrize("sampler", ["adsc_rule_based", "adsc_teacher"])
def test_a_router_that_makes_up_tasks_is_named_for_never_proposing_an_evaluated_one(sampler):
    """Runs from before the routers were handed every evaluated task (the rule-based one saw only the pool)
    keep their old ids; these runs have new ones."""
    config = TrainConfig(sampler=sampler)
    identity = run_identity(config)
    assert (
        identity["proposals"] == NEVER_EVALUATED
        and identity["policy"] == run_identity(TrainConfig())["policy"]
    )
    before = {key: value for key, value in identity.items() if key != "proposals"}
    assert run_id(config, identity=identity) != run_id(config, identity=before)
    assert sampler_models(sampler, {}) == ({"teacher": SHIPPED_TEACHER} if sampler == "adsc_teacher" else {})


# ---------------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------------


def test_a_teacher_router_run_logs_the_teachers_tasks(tiny_policy, tmp_path):
    config = TrainConfig(
        data=DataSpec(tiny_policy, train_tasks="generated:200:1", eval_tasks="generated:20:0", eval_limit=4),
        eval=EvalSpec(n=2, sampling=SamplingConfig(max_new_tokens=10)),
        sampler="adsc_teacher",
        sampler_options={"eval_tasks": "generated:20:0"},
        steps=2,
        prompts_per_step=8,
        group_size=2,
        sampling=SamplingConfig(max_new_tokens=10),
        threads=1,
    )
    store = train(config, root=tmp_path, progress=False)
    logged = store.read_table("sampler_tasks")
    assert set(logged["source"]) == {"teacher"} and logged["accepted"].any()
    assert {"step", "tier", "accepted", "reason", "nums", "target", "text"} <= set(logged.columns)
    synthetic = [r for r in store.read_steps() for k in r if k.startswith("batch_synthetic")]
    assert synthetic  # the router sent prompts to the teacher's arms
    assert sum(logged["accepted"]) == sum(
        v for r in store.read_steps() for k, v in r.items() if k.startswith("batch_synthetic")
    )


def test_parsing_the_teacher_command_imports_no_torch():
    code = (
        "import sys\nfrom countdown_study.cli import build_parser\n"
        "build_parser().parse_args(['teacher', '--steps', '3', '--ship'])\n"
        "print(','.join(m for m in ('torch', 'transformers', 'pandas') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
