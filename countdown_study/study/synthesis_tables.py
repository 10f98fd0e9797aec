"""The synthesis' cross-report questions and the cost of every row.

* (a) Which curricula beat each other: every pair of ``CURRICULA`` rows compared at pass@1 with the study's
  seed-aware comparison (``pairwise_table``), and a ranking from those pairs (``curricula_ranking``).
* (b) Is the pass@1 vs pass@16 trade-off the same across curricula: each row's difference from its uniform
  RLOO row at pass@1 against that at pass@16 (``tradeoff_table``, from ``synthesis.joint_paired``).
* (c) Does the rollout budget a curriculum spends (probes, filters) buy its gain: what each run generated
  and how long it took (``cost_table``, from the run store), set against its gain (``budget_table``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from countdown_study.study.compare import compare, verdict
from countdown_study.study.methods import (
    FIELD_BASELINES,
    REPORT_000,
    REPORT_001,
    REPORT_002,
    REPORT_003_EMBEDDED,
    REPORT_004,
    SFT,
    UNIFORM,
    UNIFORM_REPLACEMENT,
    WHOLE_UNIFORM,
    StudyResult,
)
from countdown_study.study.synthesis import UNIFORM_AGAINST, labelled
from countdown_study.study.tables import generation_cost, problem_matrix

# ---------------------------------------------------------------------------------------------------
# (a) Which curricula beat each other
# ---------------------------------------------------------------------------------------------------

CURRICULA = (UNIFORM, *REPORT_000, *REPORT_002, *REPORT_003_EMBEDDED[:3], *REPORT_004[1:], *FIELD_BASELINES)
"""The prompt-selection rows of the main block that share uniform RLOO's reward, rollouts and evaluation,
with uniform RLOO as the anchor (report 001's rows use its binary reward and report 003's VCC rows whole
rollouts: they are left out)."""

SAME_RUNS = "same runs"
"""The verdict of two rows whose per-task values are equal under every seed: one experiment, not two."""
_ORDERED = {"holds": "a above b", "reversed": "a below b"}
"""A signed verdict of ``a`` above ``b`` as an order."""
_FLIPPED = {"a above b": "a below b", "a below b": "a above b"}
"""An order seen from ``b``."""


def pairwise_table(
    matrices: Mapping[str, np.ndarray], n_resamples: int = 5000, seed: int = 0
) -> pd.DataFrame:
    """Every pair ``a`` before ``b`` of ``matrices`` (method -> per-task values ``(tasks, seeds)``) compared
    with ``compare``: ``diff``, the interval, the minimum detectable effect and ``verdict`` (``a above b``,
    ``a below b``, ``inside noise``, one seed, or ``SAME_RUNS`` when the two matrices are equal cell for
    cell: rows that trained the same way, such as a hybrid curriculum that never left the staged schedule,
    whose zero-width interval says nothing about noise)."""
    names = list(matrices)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            c = compare(matrices[a], matrices[b], seed, n_resamples)
            same = np.array_equal(matrices[a], matrices[b])
            judged = SAME_RUNS if same else verdict(c, +1)
            rows.append({"a": a, "b": b, "diff": c.diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
                         "mde": c.mde, "n_seeds": c.n_seeds,
                         "verdict": _ORDERED.get(judged, judged)})  # fmt: skip
    return pd.DataFrame(rows, columns=["a", "b", "diff", "ci_low", "ci_high", "mde", "n_seeds", "verdict"])


def pairwise_curricula(
    result: StudyResult,
    names: Sequence[str] | None = None,
    metric: str = "pass@1",
    n_resamples: int = 5000,
    seed: int = 0,
) -> pd.DataFrame:
    """``pairwise_table`` of the ``CURRICULA`` rows (or ``names``) of ``result`` at ``metric``."""
    names = [m.name for m in CURRICULA] if names is None else list(names)
    matrices = {name: problem_matrix(result, name, metric) for name in names}  # name -> (T, S)
    return pairwise_table(matrices, n_resamples, seed)


def curricula_ranking(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per method of ``pairs`` (a ``pairwise_table``): its mean difference from the others, how many it is
    above / below with an interval clear of zero, and its rank by the mean difference (1: best)."""
    both = pd.concat(
        [
            pairs[["a", "diff", "verdict"]].rename(columns={"a": "method"}),
            pairs[["b", "diff", "verdict"]]
            .rename(columns={"b": "method"})
            .assign(diff=lambda t: -t["diff"], verdict=lambda t: t["verdict"].replace(_FLIPPED)),
        ]
    )
    grouped = both.groupby("method", sort=False)
    table = pd.DataFrame(
        {
            "mean_diff_vs_others": grouped["diff"].mean(),
            "above": grouped["verdict"].agg(lambda v: int((v == "a above b").sum())),
            "below": grouped["verdict"].agg(lambda v: int((v == "a below b").sum())),
        }
    )
    table = table.sort_values("mean_diff_vs_others", ascending=False, kind="stable")
    return table.assign(rank=np.arange(1, len(table) + 1)).reset_index()


# ---------------------------------------------------------------------------------------------------
# (b) The pass@1 vs pass@16 trade-off
# ---------------------------------------------------------------------------------------------------

UNIFORM_ROWS = (UNIFORM.name, UNIFORM_REPLACEMENT.name, REPORT_001[0].name, REPORT_004[0].name,
                WHOLE_UNIFORM.name)  # fmt: skip
"""Rows that are uniform RLOO themselves (report 003's uniform row on its search-style policy is named as
``UNIFORM``)."""
TRADEOFF_METRICS = ("pass@1", "pass@16")
"""The two ends of the trade-off."""


def versus_uniform(paired: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ``joint_paired`` table that compare a row with its uniform RLOO row."""
    return paired[paired["against"] == UNIFORM_AGAINST].reset_index(drop=True)


def tradeoff_table(paired: pd.DataFrame) -> pd.DataFrame:
    """Per RLOO row that is not uniform itself (and not the SFT or IPO baseline): its difference from its
    uniform RLOO row at pass@1 and at pass@16, with intervals and verdicts (from ``synthesis.joint_paired``),
    and ``quadrant``, the signs of the two differences (e.g. ``pass@1 up, pass@16 down``)."""
    rows = versus_uniform(paired)
    rows = rows[
        rows["metric"].isin(TRADEOFF_METRICS)
        & (rows["report"] != "baselines")
        & ~rows["a"].isin(UNIFORM_ROWS)
    ]
    keys = ["block", "model", "report", "a", "b"]
    wide = rows.pivot_table(
        index=keys, columns="metric", values=["diff", "ci_low", "ci_high", "verdict", "n_seeds"],
        aggfunc="first", sort=False,
    )  # fmt: skip
    table = pd.DataFrame(index=wide.index)
    for metric in TRADEOFF_METRICS:
        for value, name in (("diff", "diff"), ("ci_low", "low"), ("ci_high", "high"), ("verdict", "verdict")):
            table[f"{metric}_{name}"] = wide[(value, metric)]
    table["n_seeds"] = wide[("n_seeds", TRADEOFF_METRICS[0])].astype(int)
    table["quadrant"] = [
        _quadrant(x, y) for x, y in zip(table["pass@1_diff"], table["pass@16_diff"], strict=True)
    ]
    return table.reset_index().rename(columns={"a": "method", "b": "reference"})


def _quadrant(pass1: float, pass16: float) -> str:
    """The signs of two differences from uniform, in words."""
    return f"pass@1 {_direction(pass1)}, pass@16 {_direction(pass16)}"


def _direction(diff: float) -> str:
    return "up" if diff > 0 else "down" if diff < 0 else "level"


# ---------------------------------------------------------------------------------------------------
# (c) What each row cost, and whether its budget bought its gain
# ---------------------------------------------------------------------------------------------------


def run_times(result: StudyResult) -> pd.DataFrame:
    """Per (method, seed): ``wall_seconds`` (started to finished in the run's provenance: training and
    evaluation; a resumed run's also spans its pause) and ``phase_seconds`` (the step log's ``seconds_*``
    phase timings summed: sampling, grading, probes, filters and updates; NaN without a step log)."""
    runs = result.runs.set_index(["method", "seed"])
    wall = pd.to_datetime(runs["finished"], utc=True) - pd.to_datetime(runs["started"], utc=True)
    times = pd.DataFrame({"wall_seconds": wall.dt.total_seconds()})
    steps = result.steps
    phases = [c for c in steps.columns if c.startswith("seconds_")]
    if phases:
        per_run = steps.groupby(["method", "seed"])[phases].sum().sum(axis=1)
        times["phase_seconds"] = per_run.reindex(times.index)
    else:
        times["phase_seconds"] = np.nan
    return times


def extra_token_share(steps: pd.DataFrame) -> pd.Series:
    """Per (method, seed): the share of generated completion tokens a run spent beyond its update's groups
    (a sampler's probes, a filter's discarded groups)."""
    extra = sum(steps[c].fillna(0) for c in ("probe_tokens", "discarded_tokens") if c in steps)
    frame = pd.DataFrame({"method": steps["method"], "seed": steps["seed"], "extra": extra,
                          "generated": steps["tokens"] + extra})  # fmt: skip
    sums = frame.groupby(["method", "seed"])[["extra", "generated"]].sum()
    return sums["extra"] / sums["generated"]


COST_COLUMNS = ("wall_seconds", "phase_seconds", "tokens_per_run", "rollouts_per_step", "optimizer_steps",
                "extra_token_share", "pass@1", "gain", "gain_per_million_tokens")  # fmt: skip
"""The columns ``block_cost`` puts first (their seed s.d. follow as ``<column>_sd``)."""


def block_cost(result: StudyResult, block: str, reference: str = SFT.name) -> pd.DataFrame:
    """Per method of one block: mean over seeds of ``run_times`` and ``extra_token_share``, and
    ``generation_cost`` (rollouts per step, tokens per run, pass@1, its gain over ``reference``, the
    starting policy, and that gain per million generated tokens); RLOO columns are NaN for SFT and IPO."""
    per_run = run_times(result)
    if not result.steps.empty:
        per_run["extra_token_share"] = extra_token_share(result.steps).reindex(per_run.index)
    grouped = per_run.groupby(level="method", sort=False)
    table = grouped.mean().join(grouped.std(ddof=1).add_suffix("_sd")).join(grouped.size().rename("n_seeds"))
    table = table.reindex(list(result.methods)).reset_index()
    if not result.steps.empty and reference in result.methods:
        generated = generation_cost(result, reference).drop(columns="n_seeds")
        table = table.merge(generated, on="method", how="left")
    first = ["method", "n_seeds", *COST_COLUMNS]
    table = table[[*[c for c in first if c in table], *[c for c in table if c not in first]]]
    return labelled(table, block, result)


def cost_table(results: Mapping[str, StudyResult], reference: str = SFT.name) -> pd.DataFrame:
    """``block_cost`` of every block in one table."""
    return pd.concat([block_cost(r, block, reference) for block, r in results.items()], ignore_index=True)


def budget_table(cost: pd.DataFrame, tradeoff: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``tradeoff``: its pass@1 gain over its uniform row (with interval), the tokens it generated
    beside that row's (``tokens_vs_uniform``, a ratio; ``extra_million_tokens``, the difference per run),
    ``gain_per_extra_million`` (the gain over the extra tokens, where it generated more), the share of its
    tokens spent on probes and discarded groups, and its pass@1 gain over the starting policy per million
    generated tokens beside the uniform row's."""
    per = cost.set_index(["block", "method"])
    rows = []
    for row in tradeoff.to_dict("records"):
        own, uniform = per.loc[(row["block"], row["method"])], per.loc[(row["block"], row["reference"])]
        extra = (own["tokens_per_run"] - uniform["tokens_per_run"]) / 1e6  # millions per run
        gain = row["pass@1_diff"]
        rows.append({**{k: row[k] for k in ("block", "model", "report", "method", "reference")},
                     "gain_vs_uniform": gain, "gain_low": row["pass@1_low"], "gain_high": row["pass@1_high"],
                     "tokens_vs_uniform": own["tokens_per_run"] / uniform["tokens_per_run"],
                     "extra_million_tokens": extra,
                     "gain_per_extra_million": gain / extra if extra > 0 else np.nan,
                     "extra_token_share": own.get("extra_token_share", np.nan),
                     "gain_per_million_tokens": own["gain_per_million_tokens"],
                     "uniform_gain_per_million_tokens": uniform["gain_per_million_tokens"]})  # fmt: skip
    return pd.DataFrame(rows)
