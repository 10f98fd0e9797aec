"""Extraction, the verifier's first step (``countdown.verifier``): where the graded text starts and where
its answer spans are.

If a response still holds a chat transcript, only the text after the *last* assistant marker
(``ASSISTANT_MARKERS``) is graded (``grading_start``). Answer spans are matched like the regex
``<answer>(.*?)</answer>`` (DOTALL): from an opening tag to the next closing tag, then on
(``iter_answer_spans``); ``last_answer_span`` finds the last one from the end in linear time. Tags are found
with ``str.find``/``str.rfind`` loops, so any input is scanned in bounded time.
"""

from __future__ import annotations

from collections.abc import Iterator

from countdown_study.countdown.prompts import ANSWER_CLOSE, ANSWER_OPEN

ASSISTANT_MARKERS = ("<|im_start|>assistant", "Assistant:")
"""Chat markers: when present, only the text after the last one is graded."""


def _as_text(response: str | bytes | bytearray | None) -> str:
    """Responses are text; bytes are decoded as UTF-8 (invalid bytes replaced), ``None`` is empty."""
    if response is None:
        return ""
    if isinstance(response, bytes | bytearray):
        return bytes(response).decode("utf-8", errors="replace")
    if isinstance(response, str):
        return response
    raise TypeError(f"response must be str or bytes, not {type(response).__name__}")


def grading_start(response: str) -> int:
    """Offset where graded text begins: just after the last assistant marker, else 0."""
    start = 0
    for marker in ASSISTANT_MARKERS:
        pos = response.rfind(marker)
        if pos != -1:
            start = max(start, pos + len(marker))
    return start


def iter_answer_spans(response: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each answer span at or after ``start``, in order (regex ``(.*?)`` semantics)."""
    pos = start
    while (open_at := response.find(ANSWER_OPEN, pos)) != -1:
        close_at = response.find(ANSWER_CLOSE, open_at + len(ANSWER_OPEN))
        if close_at == -1:
            return
        pos = close_at + len(ANSWER_CLOSE)
        yield open_at, pos


def last_answer_span(response: str, start: int = 0) -> tuple[int, int] | None:
    """The last span ``iter_answer_spans`` would yield, found from the end in linear time.

    It closes at the first closing tag after the last opening tag that has one after it, and opens at
    the first opening tag after the closing tag before that opening tag.
    """
    last_close = response.rfind(ANSWER_CLOSE, start)
    if last_close == -1:
        return None
    last_open = response.rfind(ANSWER_OPEN, start, last_close)
    if last_open == -1:
        return None
    close_at = response.find(ANSWER_CLOSE, last_open + len(ANSWER_OPEN))
    prev_close = response.rfind(ANSWER_CLOSE, start, last_open)
    open_at = response.find(ANSWER_OPEN, start if prev_close == -1 else prev_close + len(ANSWER_CLOSE))
    return open_at, close_at + len(ANSWER_CLOSE)
