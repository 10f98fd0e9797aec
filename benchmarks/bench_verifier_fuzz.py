"""Fuzz the verifier and compare it with TinyZero's scoring semantics on ordinary answers.

Part 1 (robustness): at least 1,000,000 seeded adversarial strings from eight families (random grammar
expressions, mutated valid answers, random unicode, random bytes, operator soup, deep nesting, huge
numbers, tag soup) go through ``compute_score``; every tenth also through ``scan_answers``. Reported:
crashes (must be 0), rewards outside {0, format_score, score} (must be 0), worst-case and percentile
seconds per call, throughput; plus a few giant fixed inputs (10 MB, 100k nesting, many tags). On a
shared machine a single call can be preempted for milliseconds, so the 100 slowest calls are re-timed
(min of 5) and both figures are kept.

Part 2 (agreement): TinyZero's published semantics, re-implemented below (text after the assistant
marker, its last line, the last answer span by regex, numbers by ``\\d+`` as a multiset, ``eval`` after
a character whitelist, 1e-5 tolerance), against ``compute_score`` on ordinary well-formed responses:
3-4 numbers from 1-99, correct answers, wrong values, wrong / reused / missing numbers, division by
zero, ``expr = target`` equations, responses without an answer. Expected agreement: 100%. Documented
divergences (by design) are listed with both scores on hand-made examples.

Run: ``python benchmarks/bench_verifier_fuzz.py`` with the package installed (or ``PYTHONPATH=.``);
about two to four minutes on one core.
Writes ``benchmarks/results/verifier_fuzz.json``.
"""

from __future__ import annotations

import argparse
import heapq
import operator
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import numpy as np

from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN, format_prompt
from countdown_study.countdown.verifier import compute_score, scan_answers, verify
from countdown_study.runs.files import atomic_write_json
from countdown_study.runs.provenance import provenance

RESULTS = Path(__file__).resolve().parent / "results" / "verifier_fuzz.json"
FORMAT_SCORE, SCORE = 0.1, 1.0
SLOWEST_KEPT = 100
Case = tuple[str | bytes, list[int], int]  # (response, numbers, target)

# --- expressions -----------------------------------------------------------------------------------

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
_APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def random_expression(
    rng: random.Random, nums: list[int], redundant: float = 0.2
) -> tuple[str, Fraction | None]:
    """A random binary tree over ``nums`` (each once), rendered with minimal parentheses; exact value."""
    # (text, precedence of its top operator (3: a literal), exact value or None after a division by zero)
    items: list[tuple[str, int, Fraction | None]] = [(str(n), 3, Fraction(n)) for n in nums]
    rng.shuffle(items)
    while len(items) > 1:
        (a, pa, va), (b, pb, vb) = items.pop(rng.randrange(len(items))), items.pop(rng.randrange(len(items)))
        op = rng.choice("+-*/")
        p = _PREC[op]
        left = f"({a})" if pa < p or rng.random() < redundant else a
        right = f"({b})" if pb < p or (pb == p and op in "-/") or rng.random() < redundant else b
        value = None
        if va is not None and vb is not None and not (op == "/" and vb == 0):
            value = _APPLY[op](va, vb)
        items.append((f"{left} {op} {right}", p, value))
    return items[0][0], items[0][2]


def random_task(rng: random.Random) -> tuple[list[int], int]:
    """3 or 4 numbers in 1-99 (duplicates allowed) and a target in 10-100."""
    return [rng.randint(1, 99) for _ in range(rng.choice((3, 4)))], rng.randint(10, 100)


# --- adversarial families --------------------------------------------------------------------------

UNICODE_DIGITS = "\u0663\uff13\u0969\u1813\U0001d7d1\u00b3\u2463"
JUNK = [
    "**", "//", "e5", "0x", "1_000", "__import__('os')", "lambda:0", "()", "(", ")", "\x00", "\u00a0", "\ud800",
    "Assistant:", "<|im_start|>assistant", ANSWER_OPEN, ANSWER_CLOSE, "<answer", "</", "=", ".", "-", "+", "~",
    "\n", "\t", "\r", "\x0b", " ", "9" * 40, "%", "^", "&", "|", "[", "]", "j", "'", '"', "\\", *UNICODE_DIGITS,
]  # fmt: skip


def fam_grammar(rng: random.Random) -> Case:
    """Random grammar expressions: many numbers, big literals, forbidden operators mixed in."""
    nums = [
        rng.randint(0, 10**15) if rng.random() < 0.05 else rng.randint(0, 99)
        for _ in range(rng.randint(1, 8))
    ]
    expr, value = random_expression(rng, nums, redundant=0.3)
    if rng.random() < 0.3:
        expr = expr.replace(rng.choice("+-*/"), rng.choice(["**", "//", "- -", "+ +", "%"]))
    target = (
        int(value)
        if value is not None and value.denominator == 1 and rng.random() < 0.5
        else rng.randint(0, 100)
    )
    return f"<think>x</think>{ANSWER_OPEN}{expr}{ANSWER_CLOSE}", nums, target


def _mutate(rng: random.Random, text: str) -> str:
    """One random edit: insert junk, delete, replace, duplicate a slice, swap or reverse."""
    i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
    kind = rng.randrange(6)
    if kind == 0:
        return text[:i] + rng.choice(JUNK) + text[i:]
    if kind == 1:
        return text[:i] + text[j:]
    if kind == 2:
        return text[:i] + rng.choice(JUNK) + text[j:]
    if kind == 3:
        return text[:j] + text[i:j] * rng.randint(1, 50) + text[j:]
    if kind == 4 and len(text) > 1:
        k = rng.randrange(len(text) - 1)
        return text[:k] + text[k + 1] + text[k] + text[k + 2 :]
    return text[:i] + text[i:j][::-1] + text[j:]


def fam_mutated(rng: random.Random) -> Case:
    """A valid, correct answer with 1-4 random edits (the ground truth is the original's)."""
    nums, _ = random_task(rng)
    expr, value = random_expression(rng, nums)
    target = int(value) if value is not None and value.denominator == 1 else 24
    text = f"<think>{' '.join(map(str, nums))}</think>\n{ANSWER_OPEN}{expr}{ANSWER_CLOSE}"
    for _ in range(rng.randint(1, 4)):
        text = _mutate(rng, text)
    return text, nums, target


def fam_unicode(rng: random.Random) -> Case:
    """Random code points (surrogates included), sometimes inside answer tags."""
    text = "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(0, 120)))
    if rng.random() < 0.6:
        text = ANSWER_OPEN + text + ANSWER_CLOSE
    return text, *random_task(rng)


def fam_bytes(rng: random.Random) -> Case:
    """Random bytes, sometimes around a valid answer."""
    raw = rng.randbytes(rng.randint(0, 200))
    if rng.random() < 0.5:
        raw = raw + b"<answer>1 + 2</answer>" + rng.randbytes(rng.randint(0, 20))
    return raw, [1, 2], 3


SOUP = ["1", "2", "3", "99", "0", "007", "+", "-", "*", "/", "**", "//", "(", ")", " ", "\t", "\n"]


def fam_soup(rng: random.Random) -> Case:
    """Operator soup inside answer tags."""
    body = "".join(rng.choice(SOUP) for _ in range(rng.randint(0, rng.choice((8, 40, 200)))))
    return ANSWER_OPEN + body + ANSWER_CLOSE, [1, 2, 3], rng.choice((0, 1, 6, 7, 9))


def fam_nesting(rng: random.Random) -> Case:
    """Deep nesting up to 100k: balanced, unclosed, unary chains and long operator chains."""
    d = int(10 ** rng.uniform(0, 5))
    body = rng.choice(
        [
            "(" * d + "1" + ")" * d,
            "(" * d + "1",
            "1" + ")" * d,
            "-" * d + "1",
            "1+" * d + "1",
            "((1)+" * d + "1",
        ]
    )
    return ANSWER_OPEN + body + ANSWER_CLOSE, [1], 1


def fam_huge(rng: random.Random) -> Case:
    """Huge literals, power towers and long products."""
    k = int(10 ** rng.uniform(0, 5))
    body = rng.choice(
        [
            "9" * k,
            "9**9**9",
            "9**" * min(k, 60) + "9",
            " * ".join(["999999999999"] * min(k, 20)),
            "1/" * min(k, 80) + "1",
            "2" + "*2" * min(k, 120),
            "10" + "0" * k + "+1",
        ]
    )
    return ANSWER_OPEN + body + ANSWER_CLOSE, [9, 9, 9], 9


TAGS = [
    ANSWER_OPEN,
    ANSWER_CLOSE,
    "<answer",
    "answer>",
    "</answer",
    "Assistant:",
    "<|im_start|>assistant",
    "1+2",
]


def fam_tags(rng: random.Random) -> Case:
    """Tag soup: fragments, nesting, unclosed tags, markers, occasionally thousands of repeats."""
    parts = [rng.choice(TAGS + JUNK) for _ in range(rng.randint(0, 60))]
    if rng.random() < 0.02:
        parts = parts * rng.randint(100, 5000)
    return "".join(parts), [1, 2], 3


FAMILIES: dict[str, Callable[[random.Random], Case]] = {
    "grammar": fam_grammar,
    "mutated": fam_mutated,
    "unicode": fam_unicode,
    "bytes": fam_bytes,
    "soup": fam_soup,
    "nesting": fam_nesting,
    "huge": fam_huge,
    "tags": fam_tags,
}


def giant_cases() -> dict[str, str]:
    """Fixed worst-case inputs, each timed on its own."""
    return {
        "10MB_text": "x" * 10_000_000,
        "10MB_in_one_span": ANSWER_OPEN + "1+" * 5_000_000 + "1" + ANSWER_CLOSE,
        "100k_nested_parens": ANSWER_OPEN + "(" * 100_000 + "1" + ")" * 100_000 + ANSWER_CLOSE,
        "nines_100k": ANSWER_OPEN + "9" * 100_000 + ANSWER_CLOSE,
        "power_tower": ANSWER_OPEN + "9**9**9" + ANSWER_CLOSE,
        "500k_answer_spans": (ANSWER_OPEN + "1+2" + ANSWER_CLOSE) * 500_000,
        "1M_open_tags": ANSWER_OPEN * 1_000_000 + ANSWER_CLOSE,
        "1M_close_tags": ANSWER_OPEN + "1" + ANSWER_CLOSE * 1_000_000,
        "1M_markers": "Assistant:" * 1_000_000,
    }


# --- part 1: fuzz ----------------------------------------------------------------------------------


def fuzz(n: int, seed: int) -> dict:
    """Run ``n`` adversarial cases round-robin over the families; count crashes and time each call."""
    rngs = {name: random.Random(f"{seed}:{name}") for name in FAMILIES}
    names = list(FAMILIES)
    seconds = np.empty(n)
    cpu_ns = 0
    crashes: list[dict] = []
    untimed: list[int] = []
    bad_rewards = 0
    reasons: dict[str, Counter] = {name: Counter() for name in names}
    slowest: list[tuple[float, int, str, Case]] = []  # min-heap of the SLOWEST_KEPT slowest calls
    start = time.perf_counter()
    for i in range(n):
        name = names[i % len(names)]
        response, nums, target = FAMILIES[name](rngs[name])
        truth = {"target": target, "numbers": nums}
        c0, t0 = time.process_time_ns(), time.perf_counter()
        try:
            reward = compute_score(response, truth)
        except Exception as err:  # the fuzzer counts every exception as a crash
            crashes.append({"family": name, "index": i, "error": repr(err), "input": repr(response[:200])})
            untimed.append(i)
            continue
        seconds[i] = dt = time.perf_counter() - t0
        cpu_ns += time.process_time_ns() - c0
        if i % 10 == 0:
            try:
                scan_answers(response, nums, target)
            except Exception as err:  # the fuzzer counts every exception as a crash
                crashes.append({"family": name, "index": i, "error": "scan: " + repr(err)})
        if len(slowest) < SLOWEST_KEPT or dt > slowest[0][0]:
            push = heapq.heappush if len(slowest) < SLOWEST_KEPT else heapq.heapreplace
            push(slowest, (dt, i, name, (response, nums, target)))
        if reward not in (0.0, FORMAT_SCORE, SCORE):
            bad_rewards += 1
        if (i // len(names)) % 50 == 0:
            reasons[name][verify(response, nums, target).reason.value] += 1
    wall = time.perf_counter() - start
    timed = np.delete(seconds, untimed)
    return {
        "n": n,
        "crashes": len(crashes),
        "crash_examples": crashes[:10],
        "rewards_outside_allowed_set": bad_rewards,
        "worst_case_seconds_per_call": retime(slowest),
        "seconds_per_call_percentiles": {
            q: float(np.percentile(timed, float(q))) for q in ("50", "99", "99.9", "99.99")
        },
        "mean_seconds_per_call": float(timed.mean()),
        "throughput_responses_per_second": n / float(timed.sum()),
        "throughput_responses_per_cpu_second": n / (cpu_ns * 1e-9),
        "wall_seconds_with_generation": wall,
        "reason_histogram_sampled_1_in_50": {k: dict(v.most_common()) for k, v in reasons.items()},
    }


def retime(slowest: list[tuple[float, int, str, Case]], repeats: int = 5) -> dict:
    """The slowest calls as measured, and re-timed (min of ``repeats``) to separate the verifier's own
    cost from preemption on a shared machine."""
    rows = []
    for first, i, name, (response, nums, target) in sorted(slowest, reverse=True):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            compute_score(response, {"target": target, "numbers": nums})
            times.append(time.perf_counter() - t0)
        rows.append(
            {"family": name, "index": i, "length": len(response), "first": first, "retimed": min(times)}
        )
    worst = max(rows, key=lambda r: r["retimed"])
    return {
        "seconds": rows[0]["first"],
        "retimed_seconds": worst["retimed"],
        "retimed_worst": worst,
        "slowest_first_measurements": rows[:10],
    }


def time_giants() -> dict[str, dict]:
    """Seconds for compute_score and scan_answers on each giant input."""
    out = {}
    for name, response in giant_cases().items():
        t0 = time.perf_counter()
        reward = compute_score(response, {"target": 3, "numbers": [1, 2]})
        t1 = time.perf_counter()
        spans = len(scan_answers(response, [1, 2], 3).spans)
        t2 = time.perf_counter()
        out[name] = {"chars": len(response), "reward": reward, "compute_score_s": t1 - t0}
        out[name] |= {"scan_answers_s": t2 - t1, "spans": spans}
    return out


# --- part 2: TinyZero semantics ------------------------------------------------------------------

_TZ_SPAN = re.compile(r"<answer>(.*?)</answer>")
_TZ_ALLOWED = re.compile(r"^[\d+\-*/().\s]+$")


def tinyzero_score(response: str, truth: dict, format_score: float = 0.1, score: float = 1.0) -> float:
    """TinyZero's published semantics (its countdown reward), re-implemented for the comparison.

    Only for ordinary inputs: ``eval`` here would hang on ``9**9**9``.
    """
    for marker in ("Assistant:", "<|im_start|>assistant"):
        if marker in response:
            response = response.split(marker, 1)[1]
            break
    else:
        return 0.0
    matches = list(_TZ_SPAN.finditer(response.split("\n")[-1]))
    if not matches:
        return 0.0
    equation = matches[-1].group(1).strip()
    if sorted(int(x) for x in re.findall(r"\d+", equation)) != sorted(truth["numbers"]):
        return format_score
    if not _TZ_ALLOWED.match(equation):
        return format_score
    try:
        result = eval(equation, {"__builtins__": None}, {})  # the semantics being compared
    except (SyntaxError, ZeroDivisionError, TypeError, NameError):
        return format_score
    return score if abs(result - truth["target"]) < 1e-5 else format_score


def ordinary_case(rng: random.Random) -> tuple[str, str, list[int], int]:
    """One ordinary response in TinyZero's layout (prompt, marker, think, answer on the last line)."""
    nums, target = random_task(rng)
    kinds = [
        "correct",
        "correct",
        "wrong_value",
        "replaced",
        "reused",
        "missing",
        "equation",
        "div_zero",
        "none",
    ]
    kind = rng.choice(kinds)
    if kind == "div_zero":  # a task with a repeated number, divided by its difference with itself
        nums[1] = nums[0]
    used = list(nums)
    if kind == "replaced":
        used[rng.randrange(len(used))] = rng.randint(1, 99)
    elif kind == "reused":
        used[rng.randrange(len(used))] = rng.choice(nums)
    elif kind == "missing":
        used.pop(rng.randrange(len(used)))
    expr, value = random_expression(rng, used)
    if kind == "div_zero":
        expr = f"{nums[2]} / ({nums[0]} - {nums[1]})" + "".join(f" + {x}" for x in nums[3:])
    if kind == "correct" and value is not None and value.denominator == 1:
        target = int(value)
    if rng.random() < 0.2:
        expr = expr.replace(" ", "")
    answer = (
        f"{ANSWER_OPEN}{expr} = {target}{ANSWER_CLOSE}"
        if kind == "equation"
        else ANSWER_OPEN + expr + ANSWER_CLOSE
    )
    think = f"<think>Let me try {' and '.join(map(str, nums))}: {expr} ...</think>\n"
    body = think + ("I could not find it." if kind == "none" else answer)
    prompt = format_prompt(nums, target, "tinyzero_base").removesuffix("<think>")
    return kind, prompt + body, nums, target


def agreement(n: int, seed: int) -> dict:
    """Agreement of compute_score with tinyzero_score on ``n`` ordinary responses."""
    rng = random.Random(f"{seed}:ordinary")
    by_kind: dict[str, Counter] = {}
    pairs: Counter = Counter()
    reasons: Counter = Counter()
    disagreements = []
    for _ in range(n):
        kind, response, nums, target = ordinary_case(rng)
        truth = {"target": target, "numbers": nums}
        ours, theirs = compute_score(response, truth), tinyzero_score(response, truth)
        by_kind.setdefault(kind, Counter())["agree" if ours == theirs else "disagree"] += 1
        pairs[f"ours={ours} tinyzero={theirs}"] += 1
        reasons[verify(response, nums, target).reason.value] += 1
        if ours != theirs and len(disagreements) < 10:
            disagreements.append({"response": response[-200:], "ours": ours, "tinyzero": theirs})
    agree = sum(c["agree"] for c in by_kind.values())
    return {
        "n": n,
        "agree": agree,
        "agreement_rate": agree / n,
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "score_pairs": dict(pairs.most_common()),
        "our_reasons": dict(reasons.most_common()),
        "disagreement_examples": disagreements,
    }


# (name, response, numbers, target, why the scores differ)
DIVERGENCES = [
    ("no_marker", "<answer>3 + 5</answer>", [3, 5], 8, "completions only: we grade text without a marker"),
    (
        "newline_after_answer",
        "Assistant: <answer>3 + 5</answer>\n",
        [3, 5],
        8,
        "TinyZero reads only the last line",
    ),
    ("unary_minus", "Assistant: <answer>-3 + 5 + 10</answer>", [3, 5, 10], 12, "we reject unary operators"),
    ("power", "Assistant: <answer>2 ** 3</answer>", [2, 3], 8, "we reject ** (TinyZero evaluates it)"),
    (
        "float_tolerance",
        "Assistant: <answer>1 + 1 / (99 * 98 * 97)</answer>",
        [1, 1, 99, 98, 97],
        1,
        "exact value vs 1e-5 tolerance (needs 5 numbers; none with 3-4 numbers from 1-99)",
    ),
    (
        "text_after_last_marker",
        "Assistant: x\n<answer>3 + 5</answer> Assistant: ok",
        [3, 5],
        8,
        "we grade after the last marker, TinyZero after the first",
    ),
]


def divergences() -> list[dict]:
    """Both scores on the documented by-design differences."""
    rows = []
    for name, response, nums, target, why in DIVERGENCES:
        truth = {"target": target, "numbers": nums}
        rows.append(
            {
                "name": name,
                "response": response,
                "ours": compute_score(response, truth),
                "tinyzero": tinyzero_score(response, truth),
                "why": why,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="adversarial strings")
    parser.add_argument("--ordinary", type=int, default=200_000, help="ordinary responses for the agreement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    record = {"provenance": provenance(args.seed)}
    t0 = time.perf_counter()
    record["fuzz"] = fuzz(args.n, args.seed)
    f = record["fuzz"]
    print(f"fuzz: {f['n']:,} strings, crashes {f['crashes']}, bad rewards {f['rewards_outside_allowed_set']}")
    w = f["worst_case_seconds_per_call"]
    print(
        f"  worst {w['seconds'] * 1e3:.2f} ms/call (re-timed {w['retimed_seconds'] * 1e3:.2f} ms), ", end=""
    )
    print(f"p99.9 {f['seconds_per_call_percentiles']['99.9'] * 1e6:.0f} us, ", end="")
    print(f"throughput {f['throughput_responses_per_second']:,.0f} responses/s ", end="")
    print(f"({f['throughput_responses_per_cpu_second']:,.0f} per CPU second)")
    record["giants"] = time_giants()
    for name, g in record["giants"].items():
        print(
            f"  {name:>20}: compute_score {g['compute_score_s'] * 1e3:8.2f} ms, scan {g['scan_answers_s']:.3f} s"
        )
    record["tinyzero_agreement"] = a = agreement(args.ordinary, args.seed)
    print(f"tinyzero agreement on {a['n']:,} ordinary responses: {a['agreement_rate']:.4%}")
    record["tinyzero_divergences_by_design"] = divergences()
    for row in record["tinyzero_divergences_by_design"]:
        print(f"  {row['name']:>22}: ours {row['ours']}, tinyzero {row['tinyzero']} ({row['why']})")
    record["provenance"]["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    record["wall_seconds"] = time.perf_counter() - t0
    atomic_write_json(args.out, record)
    print(f"wrote {args.out} ({record['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
