"""The paper's sentences that state a result, written from the tables that carry it.

A sentence of the abstract, the introduction or a section that says which way a difference goes ("RLOO
sharpens the first sample ...", "none of the claims that a method raises pass@1 holds") is built here from
the paired rows and verdicts it rests on, never typed into ``paper/``: when the numbers change, the
sentence changes with them, and while a notebook has not run, the sentence says so instead. Every
function is pure (rows and tables in, LaTeX out). Imports pandas, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

from countdown_study.reporting.latex import MISSING, escape, in_math, interval, is_missing, number

Row = Mapping[str, object]

# ----------------------------------------------------------------------------------------------------
# one paired row


def direction(row: Row) -> int:
    """+1 when the row's interval lies above zero, -1 below, 0 when it covers zero or is missing."""
    low, high = row.get("ci_low"), row.get("ci_high")
    if is_missing(low) or is_missing(high):
        return 0
    return 1 if float(low) > 0 else -1 if float(high) < 0 else 0


def difference(row: Row, mde: bool = False) -> str:
    """``+0.047 [+0.019, +0.075]`` (with ``(MDE 0.038; holds)`` after it when ``mde``, else
    ``(holds)``): a row's difference, interval and verdict as LaTeX."""
    diff = in_math(number(row.get("diff"), signed=True))
    notes = [f"MDE {number(row.get('mde'))}"] if mde and not is_missing(row.get("mde")) else []
    if not is_missing(row.get("verdict")):
        notes.append(str(row["verdict"]))
    return f"{diff} {interval(row.get('ci_low'), row.get('ci_high'))}" + (
        f" ({'; '.join(notes)})" if notes else ""
    )


_MOVES = {1: "rises", -1: "falls", 0: "stays inside the noise"}


def reading(pass_one: Row, pass_sixteen: Row) -> str:
    """What a pass@1 row and a pass@16 row of one contrast say together, from their intervals: sharper
    first samples and a narrower spread when pass@1 rises and pass@16 falls, else each metric's move."""
    one, sixteen = direction(pass_one), direction(pass_sixteen)
    if (one, sixteen) == (1, -1):
        return "it sharpens the first sample and narrows the spread of the rest"
    return f"pass@1 {_MOVES[one]} and pass@16 {_MOVES[sixteen]}"


def agreement(*rows: Row) -> str:
    """``, as the reports found`` when every row's verdict holds, ``, against the reports`` when one is
    reversed, else nothing (the verdicts in parentheses say the rest)."""
    verdicts = [str(r.get("verdict")) for r in rows]
    if verdicts and all(v == "holds" for v in verdicts):
        return ", as the reports found"
    if "reversed" in verdicts:
        return ", against the reports' finding"
    return ""


# ----------------------------------------------------------------------------------------------------
# the baselines: abstract and introduction

BASELINES_NOT_RUN = "The baselines (notebook 02) have not run yet for these results."
"""The abstract's and introduction's sentence while the baselines' paired table is not in the results."""


def abstract_baselines(rloo_one: Row | None, rloo_sixteen: Row | None, ipo_one: Row | None) -> str:
    """The abstract's sentence on uniform RLOO and IPO against SFT (``baselines_paired`` rows)."""
    if rloo_one is None or rloo_sixteen is None or ipo_one is None:
        return BASELINES_NOT_RUN
    return (
        f"On our small embedded policy, uniform RLOO changes pass@1 over SFT by {difference(rloo_one)} "
        f"and pass@16 by {difference(rloo_sixteen)}: {reading(rloo_one, rloo_sixteen)}"
        f"{agreement(rloo_one, rloo_sixteen)}; IPO changes pass@1 by {difference(ipo_one)}."
    )


def introduction_headline(rloo_one: Row | None, rloo_sixteen: Row | None, replacement: Row | None) -> str:
    """The introduction's headline: uniform RLOO against SFT at pass@1 and pass@16 and what the two say
    together, then uniform sampling with against without replacement."""
    if rloo_one is None or rloo_sixteen is None or replacement is None:
        return BASELINES_NOT_RUN
    return (
        f"The headline: uniform RLOO against SFT changes pass@1 by {difference(rloo_one, mde=True)} and "
        f"pass@16 by {difference(rloo_sixteen)}: {reading(rloo_one, rloo_sixteen)}"
        f"{agreement(rloo_one, rloo_sixteen)}. Sampling uniformly with or without replacement, which two "
        f"reports used as their baseline, differs by {difference(replacement)} at pass@1."
    )


# ----------------------------------------------------------------------------------------------------
# the reports' claims: abstract

CLAIMS_NOT_RUN = "The reports' claims are read off in notebook 90, which has not run yet for these results."
"""The abstract's sentence while the synthesis' verdict table is not in the results."""

UNIFORM = "RLOO uniform"
"""The row every curriculum's claim is measured against."""

_CLAIM = re.compile(r"^(?P<a>.+?) (?P<relation>above|below) (?P<b>.+?)(?:, on embedded)?$")


def against_uniform(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims that a method is above (``sign`` +1) or below (-1) uniform RLOO, with a numeric ``sign``:
    ``b`` and ``sign`` from their columns where the table has them, else read from the claim's text
    (``<a> above|below RLOO uniform ...``)."""
    text = claims["claim"] if "claim" in claims.columns else pd.Series("", index=claims.index)
    parsed = text.astype(str).map(_CLAIM.match)
    b = claims["b"].astype(str) if "b" in claims.columns else parsed.map(lambda m: m.group("b") if m else "")
    if "sign" in claims.columns:
        signs = pd.to_numeric(claims["sign"], errors="coerce")
    else:
        signs = parsed.map(lambda m: {"above": 1, "below": -1}[m.group("relation")] if m else 0)
    versus = claims.assign(sign=signs)
    return versus[b.str.startswith(UNIFORM) & signs.isin([1, -1])]


def _held(claims: pd.DataFrame, sign: int) -> str:
    """How many claims of one direction hold (and are reversed), and at which metric when one."""
    mine = claims[claims["sign"] == sign]
    held = mine[mine["verdict"] == "holds"]
    count = "none holds" if held.empty else f"{len(held)} hold"
    by_metric = held["metric"].value_counts(sort=False)
    if len(by_metric) == 1:
        count += f", all at {escape(by_metric.index[0])}"
    elif len(by_metric) > 1:
        count += " (" + ", ".join(f"{n} at {escape(metric)}" for metric, n in sorted(by_metric.items())) + ")"
    reversed_ = int((mine["verdict"] == "reversed").sum())
    return count + (f", and {reversed_} are reversed" if reversed_ else "")


def abstract_claims(claims: pd.DataFrame | None, counts: Mapping[str, str]) -> str:
    """The abstract's sentence on the reports' claims (the registry, ``claims.csv``): how many of each
    verdict (``counts``: ``paper.claim_counts``), then the tested claims against uniform RLOO by direction
    (a claim on the same runs as another counted once)."""
    if claims is None:
        return CLAIMS_NOT_RUN
    text = (
        f"Of the reports' {counts['ClaimsTotal']} quantitative claims, {counts['ClaimsTested']} can be tested "
        f"on our runs: {counts['ClaimsHolds']} hold, {counts['ClaimsReversed']} are reversed, "
        f"{counts['ClaimsBorderline']} are borderline, {counts['ClaimsInsideNoise']} lie inside the training "
        f"and task noise, {counts['ClaimsUnderpowered']} are underpowered (inside the noise while the "
        f"smallest difference our design detects exceeds the report's own), {counts['ClaimsUntestable']} "
        f"sit at a floor and {counts['ClaimsSameRuns']} repeat another claim's runs."
    )
    one_seed = counts.get("ClaimsOneSeedNoVerdict", "0")
    if one_seed != "0":  # a study of one training seed (the tiny and quick presets)
        text += f" {one_seed} have one training seed, which gives no verdict."
    verdicts = claims["verdict"].astype(str)
    versus = against_uniform(claims[~verdicts.str.startswith("same runs") & (verdicts != "not tested")])
    up = int((versus["sign"] == 1).sum())
    down = len(versus) - up
    if up:
        text += f" Of the {up} claims that a method raises a metric over uniform RLOO, {_held(versus, 1)}"
        text += f"; of the {down} that one lowers a metric, {_held(versus, -1)}." if down else "."
    elif down:
        text += (
            f" Of the {down} claims that a method lowers a metric below uniform RLOO, {_held(versus, -1)}."
        )
    return text


# ----------------------------------------------------------------------------------------------------
# report 003: answer abandonment


def abandonment(table: pd.DataFrame | None) -> str:
    """Report 003's section: the share of rollouts that end on a wrong answer after writing a verifying one,
    for the SFT policy and after uniform RLOO (``vcc_003_abandonment``); empty without the table."""
    if table is None:
        return ""
    rates = dict(zip(table["method"], table["abandoned_rate"], strict=True))
    sft, rloo = (number(rates.get(m)) for m in ("SFT", UNIFORM))
    if MISSING in (sft, rloo):
        return ""
    return (
        "In the abandonment table below, the share of rollouts that end on a wrong answer after writing a "
        f"verifying one is {sft} for the SFT policy and {rloo} after uniform RLOO."
    )
