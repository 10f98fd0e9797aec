"""The claim registry (``study/claims_registry.csv``): one row per quantitative claim of the five reports, well
formed, naming rows and metrics the study has, and holding every claim the ``CLAIMS_*`` dicts test today."""

import csv
import re
from pathlib import Path

import pytest

from countdown_study.study import methods, selection, synthesis

REGISTRY = Path(methods.__file__).with_name("claims_registry.csv")
COLUMNS = ["claim_id", "report", "source", "statement", "kind", "metric", "a", "b", "sign", "report_a",
           "report_b", "block", "eval_set", "not_tested_why"]  # fmt: skip
BASE_METRICS = {"pass@1", "pass@2", "pass@4", "pass@8", "pass@16", "avg_pass@k", "exact_rate", "mean_score"}
METRICS = {*BASE_METRICS, "ood_exact_pass@16", "ood_nonzero_pass@16",
           *(f"{metric} ({count} numbers)" for metric in BASE_METRICS for count in (3, 4)),
           "pass@16 - pass@1", "first_verifying_pass@1 - pass@1", "training 4-number share",
           "train_hard_share", "train deep-expression share (4 numbers)",
           "train all-numbers-required share (4 numbers)"}  # fmt: skip
"""The metrics a tested claim may name: on every task, on the tasks of one size (``claims.TASK_SIZE``), or
a gap between two metrics of each task (``claims.GAP``: the pass@k climb, report 003's abandoned answers), or
a run's training mix (``claims.TRAINING_SHARES``)."""
KIND_SIGNS = {"pair": {-1, 1}, "equal": {0}, "best": {1}, "worst": {-1}, "zero": {-1}, "nonzero": {1}}
"""The signs each kind of claim may carry."""
ID = re.compile(r"(00[0-4])\.[a-z0-9]+(?:[-.][a-z0-9]+)*")
EMBEDDED = ".embedded"
"""The id suffix of report 003's claims tested again on the embedded policy."""
SELECTION_ROWS = (synthesis.SELECTED, "Final checkpoint")
"""The two checkpoints of report 003's validation-selection claim (``study.selection``), tested on its sweep
rather than between two method rows."""
ISSUE_EXAMPLES = (
    "002.r1-dynamic-edge-above-control-pass8",
    "002.r1-dynamic-edge-above-control-pass16",
    "002.r2-dynamic-above-static-edge-pass8",
    "002.r2-dynamic-above-static-edge-pass16",
    "002.r3-static-ff-above-control-pass8",
    "002.r3-static-ff-above-static-edge-pass8",
    "002.t4-edge-above-rloo-pass1",
    "002.t4-edge-ties-kernel-pass1",
    "002.t4-edge-matches-kernel-pass16",
    "002.t4-static-ff-above-kernel-pass16",
    "002.t4-static-ff-below-edge-pass1",
    "002.fusions-best-pass1-multiply",
    "002.fusions-best-pass1-split",
    "002.density-kernel-restores-hard-share",
    "003.rloo-above-sft-pass1",
    "003.vcc-best-pass16",
    "003.ipo-best-avg-pass-k",
    "003.outcome-vcc-best-rollout-accuracy",
    "003.commit-vcc-above-commit-pass1",
    "004.real-only-above-uniform-pass16",
    "004.real-only-above-uniform-exact",
    "004.teacher-above-uniform-pass16",
    "004.teacher-above-uniform-exact",
    "004.rule-based-below-uniform-exact",
    "004.rule-based-equal-uniform-pass16",
    "004.teacher-best-mean-score",
    "004.teacher-best-pass16",
    "004.rule-based-below-real-only-mean-score",
    "004.t3-real-only-best-4num-exact",
    "004.t3-teacher-best-4num-pass16",
    "004.rule-based-nonzero-ood",
    "004.teacher-nonzero-ood",
)
"""Claims the study left untested before the registry, each of which must have a row."""


def _read() -> list[dict[str, str]]:
    with REGISTRY.open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS, f"columns {reader.fieldnames}, expected {COLUMNS}"
        return list(reader)


ROWS = _read()
TESTED = [row for row in ROWS if not row["not_tested_why"]]
BY_ID = {row["claim_id"]: row for row in ROWS}


def _block_names(block: str) -> set[str]:
    names = {m.name for _, rows in synthesis.BLOCK_ROWS[block] for m in rows}
    return names | set(SELECTION_ROWS) if block == synthesis.SEARCH else names


def _b_names(row: dict[str, str]) -> list[str]:
    return row["b"].split("|") if row["b"] else []


def _number(text: str) -> float | None:
    return float(text) if text else None


def test_ids_unique_and_well_formed():
    ids = [row["claim_id"] for row in ROWS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    for row in ROWS:
        match = ID.fullmatch(row["claim_id"])
        assert match, f"malformed claim_id {row['claim_id']!r}"
        assert match.group(1) == row["report"], f"{row['claim_id']}: report {row['report']!r}"


def test_every_report_has_claims_and_text():
    assert {row["report"] for row in ROWS} == {"000", "001", "002", "003", "004"}
    for row in ROWS:
        assert row["source"] and row["statement"], f"{row['claim_id']}: empty source or statement"


def test_kinds_and_signs():
    for row in ROWS:
        assert row["kind"] in KIND_SIGNS, f"{row['claim_id']}: unknown kind {row['kind']!r}"
        assert row["sign"] in ("-1", "0", "1"), f"{row['claim_id']}: sign {row['sign']!r}"
        assert int(row["sign"]) in KIND_SIGNS[row["kind"]], (
            f"{row['claim_id']}: {row['kind']} with {row['sign']}"
        )


def test_report_numbers_are_fractions():
    for row in ROWS:
        for column in ("report_a", "report_b"):
            value = _number(row[column])
            assert value is None or 0.0 <= value <= 1.0, f"{row['claim_id']}: {column} {value} not in [0, 1]"


def test_blocks_and_eval_sets():
    for row in ROWS:
        assert row["block"] in (synthesis.MAIN, synthesis.SEARCH), (
            f"{row['claim_id']}: block {row['block']!r}"
        )
        assert row["eval_set"] in ("test", "ood"), f"{row['claim_id']}: eval_set {row['eval_set']!r}"
        embedded = row["claim_id"].endswith(EMBEDDED)
        home = synthesis.HOME_BLOCK.get(row["report"], synthesis.MAIN)
        expected = synthesis.MAIN if embedded else home
        assert not embedded or row["report"] == "003", (
            f"{row['claim_id']}: only report 003 has embedded twins"
        )
        assert row["block"] == expected, f"{row['claim_id']}: block {row['block']}, expected {expected}"


def test_tested_rows_name_rows_of_their_block_and_allowed_metrics():
    for row in TESTED:
        cid, names, b = row["claim_id"], _block_names(row["block"]), _b_names(row)
        assert row["metric"] in METRICS, f"{cid}: metric {row['metric']!r} is not one the study tests"
        assert (row["eval_set"] == "ood") == row["metric"].startswith("ood_"), f"{cid}: eval_set vs metric"
        assert row["a"] in names, f"{cid}: a {row['a']!r} is no row of block {row['block']}"
        assert all(name in names for name in b), f"{cid}: b {b} names a row not in block {row['block']}"
        assert row["a"] not in b and len(b) == len(set(b)), f"{cid}: b {b} repeats a row or holds a"
        if row["kind"] in ("pair", "equal"):
            assert len(b) == 1, f"{cid}: a {row['kind']} claim compares two rows, got b {b}"
        elif row["kind"] in ("best", "worst"):
            assert len(b) >= 1, f"{cid}: a ranking needs the other rows in b"
        elif row["kind"] == "zero":
            assert b, (
                f"{cid}: a zero claim names its uniform control in b (its floor makes the claim untestable)"
            )


def test_tested_rows_sign_agrees_with_the_reports_numbers():
    for row in TESTED:
        a, b, sign = _number(row["report_a"]), _number(row["report_b"]), int(row["sign"])
        if row["kind"] == "zero" and a is not None:
            assert a == 0.0, f"{row['claim_id']}: a zero claim with report_a {a}"
        elif row["kind"] == "nonzero" and a is not None:
            assert a > 0.0, f"{row['claim_id']}: a nonzero claim with report_a {a}"
        elif row["kind"] in ("pair", "best", "worst") and a is not None and b is not None:
            assert (a > b) - (a < b) == sign, (
                f"{row['claim_id']}: sign {sign} but the report gives {a} vs {b}"
            )


def test_embedded_twins_repeat_their_search_claim():
    for row in ROWS:
        if not row["claim_id"].endswith(EMBEDDED):
            continue
        twin = BY_ID.get(row["claim_id"].removesuffix(EMBEDDED))
        assert twin is not None, f"{row['claim_id']}: no search-block claim of that id"
        for column in ("kind", "metric", "a", "sign", "report_a"):
            assert row[column] == twin[column], f"{row['claim_id']}: {column} differs from its search twin"


def test_every_claims_dict_entry_has_a_tested_row():
    dicts = {name for name in dir(methods) if name.startswith("CLAIMS_")}
    assert dicts == {source for _, source, _, _ in synthesis.CLAIM_SETS}, (
        "a CLAIMS_* dict is not in CLAIM_SETS"
    )
    keys = {(r["report"], r["a"], r["b"], r["metric"], int(r["sign"]), r["block"]) for r in TESTED}
    for report, source, claims, block in synthesis.CLAIM_SETS:
        for key, sign in claims.items():
            metric = key[2] if len(key) == 3 else synthesis.HEADLINE_METRICS[report]
            wanted = (report, key[0], key[1], metric, sign, block)
            assert wanted in keys, f"{source} {key}: no tested registry row {wanted}"


def test_zero_claims_and_selection_claim_have_tested_rows():
    zeros = {(r["a"], r["metric"], r["eval_set"]) for r in TESTED if r["kind"] == "zero"}
    for method in methods.ZERO_CLAIMS_004:
        assert (method, "ood_exact_pass@16", "ood") in zeros, f"ZERO_CLAIMS_004 {method!r}: no tested row"
    chosen = [r for r in TESTED if (r["a"], r["b"]) == SELECTION_ROWS]
    assert len(chosen) == 1, f"{len(chosen)} tested rows of the validation-selection claim"
    assert int(chosen[0]["sign"]) == selection.SELECTION_CLAIM and chosen[0]["metric"] == "pass@1"


@pytest.mark.parametrize("claim_id", ISSUE_EXAMPLES)
def test_previously_untested_claims_have_rows(claim_id):
    assert claim_id in BY_ID, f"no registry row {claim_id}"
