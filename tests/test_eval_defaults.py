"""Evaluation defaults that fit the policy: the study's budget (or the policy's recorded one), a warning when
the cap cuts more than 5% of rollouts, progress bars only in a terminal, defaults in every ``--help``."""

import argparse
import json
from dataclasses import fields, replace
from types import SimpleNamespace

import pytest

from countdown_study.cli import COMMANDS, build_parser, main
from countdown_study.cli import eval as cli_eval
from countdown_study.evaluation import defaults
from countdown_study.evaluation.defaults import (
    EVAL_MAX_NEW_TOKENS,
    EVAL_SAMPLING,
    recorded_budget,
    truncation_warning,
)
from countdown_study.paths import EMBEDDED_CHECKPOINT_DIR

# ---------------------------------------------------------------------------------------------------
# The budget
# ---------------------------------------------------------------------------------------------------


def test_the_default_budget_is_the_study_presets_one():
    from countdown_study.evaluation import evaluate
    from countdown_study.study.presets import STUDY_PRESETS, StudyPreset

    preset_default = {f.name: f.default for f in fields(StudyPreset)}["eval_max_new_tokens"]
    assert EVAL_SAMPLING.max_new_tokens == EVAL_MAX_NEW_TOKENS == preset_default
    assert STUDY_PRESETS["full"].run_eval.sampling == EVAL_SAMPLING  # the study evaluates with it, as is
    assert evaluate.EVAL_SAMPLING is EVAL_SAMPLING


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_eval.configure_parser(parser)
    return parser.parse_args(["--tasks", "generated:5:0", *argv])


def _recording(folder, **sampling) -> str:
    """A policy folder whose ``sft.json`` records its quality measured with ``sampling``."""
    folder.mkdir()
    record = {"quality": {"measured_with": {"sampling": {**vars(EVAL_SAMPLING), **sampling}}}}
    (folder / "sft.json").write_text(json.dumps(record))
    return str(folder)


def test_eval_takes_the_policys_recorded_budget_else_the_studys(tmp_path):
    # embedded records a measurement at temperature 1.0, 96 tokens: not the evaluation sampling.
    assert recorded_budget(EMBEDDED_CHECKPOINT_DIR) is None
    assert recorded_budget(EMBEDDED_CHECKPOINT_DIR.parent / "embedded-search") == EVAL_MAX_NEW_TOKENS
    assert cli_eval.sampling_from_args(_parse()) == EVAL_SAMPLING
    assert cli_eval.sampling_from_args(_parse("--policy", "embedded-search")) == EVAL_SAMPLING
    own = _recording(tmp_path / "own", max_new_tokens=160)
    assert cli_eval.sampling_from_args(_parse("--policy", own)).max_new_tokens == 160
    other = _recording(tmp_path / "other", max_new_tokens=96, temperature=1.0)
    assert cli_eval.sampling_from_args(_parse("--policy", other)).max_new_tokens == EVAL_MAX_NEW_TOKENS
    given = cli_eval.sampling_from_args(_parse("--policy", own, "--max-new-tokens", "50"))
    assert given == replace(EVAL_SAMPLING, max_new_tokens=50)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "sft.json").write_text("{")
    assert recorded_budget(tmp_path / "broken") is None and recorded_budget(None) is None


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        (0.81, "81.0% of rollouts were cut at 96 new tokens (more than 5%): pass@k undercounts the policy; "
               f"raise max_new_tokens (the study evaluates at {EVAL_MAX_NEW_TOKENS})"),
        (0.0501, "5.0% of rollouts were cut at 96 new tokens"),
        (0.05, None),  # at the threshold: quiet
        (0.001, None),
        (None, None),  # finish reasons unknown (an engine that does not report them)
    ],
)  # fmt: skip
def test_truncation_warning_above_five_percent(share, expected):
    found = truncation_warning(share, 96)
    assert found == expected if expected is None else found.startswith(expected)


def test_eval_warns_when_the_cap_cuts_rollouts(tiny_policy, capsys, tmp_path):
    out = tmp_path / "out.json"
    argv = ["eval", "--policy", tiny_policy, "--tasks", "generated:2:0", "--n", "2", "--max-new-tokens", "2"]
    assert main([*argv, "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["truncated"] > defaults.TRUNCATION_WARNING  # an untrained model never stops in 2 tokens
    assert summary["config"]["sampling"]["max_new_tokens"] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"countdown-study eval: warning: {truncation_warning(summary['truncated'], 2)}"]


# ---------------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------------


class _Engine:
    """Rollouts of fixed text, one per sample."""

    def sample(self, prompts, group_size, seed, config):
        from countdown_study.rollout import Rollouts

        texts = ["<answer>1</answer>"] * (len(prompts) * group_size)
        ids = [[7]] * len(texts)
        return Rollouts(prompts, group_size, [[1]] * len(prompts), ids, texts, [], ["eos"] * len(texts))


MODEL = SimpleNamespace(config=SimpleNamespace(countdown_prompt_template="compact"))


def test_evaluation_progress_shows_in_a_terminal_only(capsys, monkeypatch):
    from countdown_study.countdown import Task
    from countdown_study.evaluation import evaluate as ev

    tasks = [Task((1, 2, 3), 6)] * 3
    monkeypatch.setattr(ev, "PROGRESS_DELAY", 0.0)
    ev.evaluate(MODEL, None, tasks, n=2, batch_size=2, engine=_Engine(), progress=True)
    assert "evaluating 3 tasks x 2" in capsys.readouterr().err
    ev.evaluate(MODEL, None, tasks, n=2, batch_size=2, engine=_Engine())  # standard error is no terminal here
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("terminal", [True, False])
def test_train_shows_progress_only_in_a_terminal(terminal, monkeypatch, tmp_path, capsys):
    import countdown_study.cli
    from countdown_study.training import loop

    seen = {}

    def fake_train(config, root=None, progress=True):
        seen["progress"] = progress
        raise ValueError("stop here")

    monkeypatch.setattr(loop, "train", fake_train)
    monkeypatch.setattr(countdown_study.cli, "interactive", lambda: terminal)
    assert main(["train", "--root", str(tmp_path)]) == 2
    assert seen == {"progress": terminal}


# ---------------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------------


def _parsers():
    """Every parser of the command line, by its prog, sub-actions (``runs verify``) included."""
    found, todo = {}, [build_parser()]
    while todo:
        parser = todo.pop()
        found[parser.prog] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return found


def test_main_help_lists_every_command_in_plain_text():
    text = build_parser().format_help()
    assert text.splitlines()[2] == f"The countdown-study command line: {', '.join(COMMANDS)}."
    assert "teacher" in text.splitlines()[2]
    assert all(f"    {name} " in text for name in COMMANDS)
    assert not [prog for prog, parser in _parsers().items() if "``" in parser.format_help()]


def test_every_option_shows_its_default():
    missing = []
    for prog, parser in _parsers().items():
        text = " ".join(parser.format_help().split()).replace("- ", "-")  # argparse wraps after a hyphen
        for action in parser._actions:
            flag = action.nargs == 0 or not action.option_strings or action.required
            shown = parser.formatter_class(prog)._get_help_string(action) if action.help else ""
            if not flag and "default" not in shown:
                missing.append(f"{prog} {action.option_strings[0]}")
            elif not flag:
                assert " ".join((shown % vars(action)).split()) in text  # as printed
    assert missing == []
    eval_help = " ".join(_parsers()["countdown-study eval"].format_help().split())
    assert f"softmax temperature (default: {EVAL_SAMPLING.temperature})" in eval_help
    assert f"else the study's {EVAL_MAX_NEW_TOKENS})" in eval_help


def test_runs_actions_have_descriptions():
    parsers = _parsers()
    for action in ("verify", "status"):
        parser = parsers[f"countdown-study runs {action}"]
        assert parser.description and len(parser.description) > 40, action
