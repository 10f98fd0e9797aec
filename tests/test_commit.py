"""Report 003's commit signals: the commit reward (table-driven) and VCC's pairs on hand-written rollouts."""

import pytest

from countdown_study.countdown.commit import (
    CONTINUATION,
    SIBLING,
    Commit,
    CommitPair,
    commit_pairs,
    commit_reward,
    commit_rewards,
    find_commit,
    find_commits,
)
from countdown_study.countdown.task import Task

TASK = Task((44, 19, 35), 98)  # report 003's qualitative example
RIGHT = "<answer>(44 + 19) + 35</answer>"
RIGHT_TOO = "<answer>(44 + 35) + 19</answer>"
WRONG = "<think>35+19=54, 44-35=9</think><answer>(35 + 19) + (44 - 35)</answer>"  # = 63
E = len(RIGHT)


# ---------------------------------------------------------------------------------------------------
# Commit reward
# ---------------------------------------------------------------------------------------------------

REWARD_CASES = [
    # (id, text, format_score, reward)
    ("no answer span: 0", "<think>44+19+35</think>", 0.1, 0.0),
    ("wrong answers only: the format score", WRONG + WRONG, 0.1, 0.1),
    ("unparsable answer: the format score", "<answer>44 plus 19</answer>", 0.1, 0.1),
    ("correct and nothing after: 1", "<think>44+19=63</think>" + RIGHT, 0.1, 1.0),
    ("trailing whitespace is not text after", RIGHT + "\n \n", 0.1, 1.0),
    ("as much text after as before: e/L = 1/2", RIGHT + "x" * E, 0.1, 0.5),
    ("correct then a wrong final answer: e/L", RIGHT + WRONG, 0.1, E / (E + len(WRONG))),
    ("wrong then correct: the commit ends the text", WRONG + RIGHT, 0.1, 1.0),
    ("two correct answers: the first one counts", RIGHT + RIGHT_TOO, 0.1, 0.5),
    ("a long ramble is floored at the format score", RIGHT + "x" * (20 * E), 0.1, 0.1),
    ("binary variant: no floor above 0", RIGHT + "x" * (20 * E), 0.0, 1 / 21),
    (
        "a chat transcript counts from the assistant marker",
        "User: hi<|im_start|>assistant" + RIGHT + "x" * E,
        0.1,
        0.5,
    ),
]


@pytest.mark.parametrize(
    ("text", "format_score", "reward"), [c[1:] for c in REWARD_CASES], ids=[c[0] for c in REWARD_CASES]
)
def test_commit_reward_table(text, format_score, reward):
    assert commit_reward(text, TASK, format_score) == pytest.approx(reward, abs=1e-12)


def test_commit_reward_scales_with_score_and_batches_prompt_major():
    assert commit_reward(RIGHT + "x" * E, TASK, 0.1, score=2.0) == pytest.approx(1.0)
    other = Task((1, 2, 3), 6)
    texts = [RIGHT, WRONG, "<answer>1+2+3</answer>", ""]
    assert commit_rewards(texts, [TASK, other], group_size=2).tolist() == [[1.0, 0.1], [1.0, 0.0]]
    with pytest.raises(ValueError, match="3 texts for 2 tasks"):
        commit_rewards(texts[:3], [TASK, other], group_size=2)


# ---------------------------------------------------------------------------------------------------
# Commits and pairs
# ---------------------------------------------------------------------------------------------------


def test_find_commit_reads_the_first_verifying_span():
    assert find_commit(RIGHT + WRONG, TASK) == Commit(E, True, False, 2)  # abandoned
    assert find_commit(WRONG + RIGHT + "\n", TASK) == Commit(len(WRONG) + E, False, True, 2)
    assert find_commit(WRONG, TASK) == Commit(-1, False, False, 1)
    assert find_commit(RIGHT + WRONG, TASK).abandoned and not find_commit(RIGHT, TASK).abandoned


def pairs_of(texts, cap=2, **flags):
    return commit_pairs(find_commits(texts, [TASK], len(texts)), len(texts), cap, **flags)


def test_correct_then_wrong_final_pairs_the_commit_with_the_full_rollout():
    assert pairs_of([RIGHT + WRONG]) == [CommitPair(0, 0, E, 0, CONTINUATION)]


def test_a_rollout_that_never_verifies_gives_no_pair_but_is_a_sibling_rejection():
    assert pairs_of([WRONG, "<think>no answer</think>"]) == []
    # the committing rollout ends at its answer: no continuation, only the sibling pair
    assert pairs_of([WRONG, RIGHT]) == [CommitPair(0, 1, E, 0, SIBLING)]


def test_two_correct_spans_cut_after_the_first():
    assert pairs_of([RIGHT + RIGHT_TOO]) == [CommitPair(0, 0, E, 0, CONTINUATION)]


def test_the_cap_keeps_continuations_first_then_siblings_in_diagonal_order():
    texts = [RIGHT + WRONG, RIGHT + WRONG, WRONG, ""]
    c0, c1 = (CommitPair(0, i, E, i, CONTINUATION) for i in (0, 1))
    siblings = [CommitPair(0, c, E, r, SIBLING) for c, r in ((0, 2), (1, 3), (0, 3), (1, 2))]
    assert pairs_of(texts, cap=10) == [c0, c1, *siblings]
    assert pairs_of(texts, cap=3) == [c0, c1, siblings[0]]
    assert pairs_of(texts, cap=10, continuation=False) == siblings
    assert pairs_of(texts, cap=10, siblings=False) == [c0, c1]


def test_pairs_index_flat_samples_prompt_by_prompt():
    commits = find_commits([WRONG, RIGHT, RIGHT + WRONG, WRONG], [TASK, TASK], group_size=2)
    assert commit_pairs(commits, 2, max_pairs_per_prompt=1) == [
        CommitPair(0, 1, E, 0, SIBLING),
        CommitPair(1, 2, E, 2, CONTINUATION),
    ]
    with pytest.raises(ValueError, match="at least 1"):
        commit_pairs(commits, 2, max_pairs_per_prompt=0)
    with pytest.raises(ValueError, match="groups of 3"):
        commit_pairs(commits, 3)
