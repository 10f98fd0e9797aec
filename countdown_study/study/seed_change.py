"""What adding training seeds changes in the claim registry (``study.claims``).

``claims_on_seeds`` computes the registry on some of a study's training seeds: every block's runs, and the
tight sweep's behind report 003's validation-selection claim, restricted to those seeds (``seed_subset``),
which gives the registry of a study that ran those seeds only. ``seed_change_table`` sets two registry
tables side by side, one row per claim: the report's own difference, our difference, interval and minimum
detectable effect before and after, each verdict and whether its category moved, and whether the MDE
reaches the size of the report's own difference. ``first_seeds_change`` compares the registry on the
study's first ``FIRST_SEEDS`` seeds with the registry on all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd

from countdown_study.reporting.readme import category as verdict_category
from countdown_study.study.claims import RegistryClaim, claims_table
from countdown_study.study.methods import StudyResult
from countdown_study.study.selection import selection_values

FIRST_SEEDS = 5
"""How many training seeds the study first ran (0-4): the registry on them is ``first_seeds_change``'s
before."""
AGAINST_ZERO = "zero"
"""``b`` of a claims row tested against zero (``claims``: a ``zero`` / ``nonzero`` claim)."""
SEED_CHANGE_COLUMNS = ("claim_id", "report", "metric", "their_diff", "n_seeds_before", "n_seeds_after",
                       "diff_before", "diff_after", "ci_before_low", "ci_before_high", "ci_after_low",
                       "ci_after_high", "mde_before", "mde_after", "mde_reaches_theirs_before",
                       "mde_reaches_theirs_after", "verdict_before", "verdict_after", "moved")  # fmt: skip
"""Columns of ``seed_change_table``: ``their_diff`` is the report's own difference on its model, the
``_before`` / ``_after`` columns are the two registries' ``n_seeds``, ``diff``, ``ci_low`` / ``ci_high``,
``mde`` and ``verdict``; ``mde_reaches_theirs_*`` says whether the MDE is at or below ``|their_diff|``
(empty where either is unknown); ``moved`` whether the verdict's category changed."""


def seed_subset(result: StudyResult, seeds: Sequence[int]) -> StudyResult:
    """``result`` with the runs of training ``seeds`` only (each one of ``result.preset.seeds``): its preset's
    seeds (in the preset's order), runs, per-sample verdicts and step logs."""
    wanted = set(seeds)
    unknown = sorted(wanted - set(result.preset.seeds))
    if not wanted or unknown:
        raise ValueError(f"seeds {sorted(wanted)} must be a non-empty subset of {list(result.preset.seeds)}")
    kept = tuple(s for s in result.preset.seeds if s in wanted)

    def only(frame: pd.DataFrame) -> pd.DataFrame:
        return frame if frame.empty else frame[frame["seed"].isin(kept)].reset_index(drop=True)

    return replace(result, preset=replace(result.preset, seeds=kept), runs=only(result.runs),
                   samples=only(result.samples), steps=only(result.steps))  # fmt: skip


def claims_on_seeds(
    results: Mapping[str, StudyResult],
    seeds: Sequence[int],
    sweep: StudyResult | None = None,
    claims: list[RegistryClaim] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """``claims.claims_table`` on ``results`` (``{"main": ..., "search": ...}``) and the tight ``sweep`` (for
    report 003's validation-selection claim; without it that claim is not tested), each restricted to
    training ``seeds`` (``seed_subset``)."""
    blocks = {block: seed_subset(result, seeds) for block, result in results.items()}
    if sweep is None:
        return claims_table(blocks, None, claims, n_resamples, seed)
    swept = seed_subset(sweep, seeds)
    return claims_table(blocks, lambda: selection_values(swept), claims, n_resamples, seed)


def their_diff(claims: pd.DataFrame) -> pd.Series:
    """The report's own difference of each row of a claims table (``RegistryClaim.report_effect``):
    ``report_a - report_b``, or ``report_a`` for a row tested against zero (``b`` is ``AGAINST_ZERO``)."""
    against_zero = claims["b"] == AGAINST_ZERO
    return claims["report_a"] - claims["report_b"].where(~against_zero, 0.0)


def mde_reaches(mde: pd.Series, effect: pd.Series) -> pd.Series:
    """Whether each MDE is at or below ``|effect|`` (nullable boolean: missing where either is unknown)."""
    known = mde.notna() & effect.notna()
    return (mde <= effect.abs()).astype("boolean").where(known, pd.NA)


def seed_change_table(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """One row per claim of two claims tables (``claims.CLAIMS_COLUMNS``) of the same registry, in
    ``after``'s order, columns ``SEED_CHANGE_COLUMNS``; tables of different claims are refused."""
    if set(before["claim_id"]) != set(after["claim_id"]) or len(before) != len(after):
        only = sorted(set(before["claim_id"]) ^ set(after["claim_id"]))
        raise ValueError(f"the two claims tables must hold the same claims, once each; differ on {only}")
    shown = ["claim_id", "n_seeds", "diff", "ci_low", "ci_high", "mde", "verdict"]
    pair = after.merge(before[shown], on="claim_id", how="left", suffixes=("_after", "_before"))
    pair = pair.rename(columns={f"ci_{end}_{when}": f"ci_{when}_{end}" for end in ("low", "high")
                                for when in ("before", "after")})  # fmt: skip
    pair["their_diff"] = their_diff(pair)
    for when in ("before", "after"):
        pair[f"mde_reaches_theirs_{when}"] = mde_reaches(pair[f"mde_{when}"], pair["their_diff"])
    category_before = pair["verdict_before"].map(verdict_category)
    pair["moved"] = category_before != pair["verdict_after"].map(verdict_category)
    return pair[list(SEED_CHANGE_COLUMNS)]


def first_seeds_change(
    results: Mapping[str, StudyResult],
    after: pd.DataFrame,
    sweep: StudyResult | None = None,
    first: int = FIRST_SEEDS,
    claims: list[RegistryClaim] | None = None,
) -> pd.DataFrame | None:
    """``seed_change_table`` from the registry (``claims``, default the whole registry) on the first
    ``first`` training seeds of ``results`` and ``sweep`` (``claims_on_seeds``) to ``after``, the registry on
    all of them; None when no block has more than ``first`` seeds: nothing to compare."""
    seeds = max((result.preset.seeds for result in results.values()), key=len)
    if len(seeds) <= first:
        return None
    return seed_change_table(claims_on_seeds(results, seeds[:first], sweep, claims), after)
