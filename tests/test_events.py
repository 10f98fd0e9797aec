"""Run events: the store logs what each run does, and ``watch`` turns the log into progress lines."""

import json
import threading
import time

import pytest

from countdown_study.runs.events import EVENTS, describe, progress_line, read_events, record_event, watch
from countdown_study.runs.store import RunStore


def events_of(root):
    return [json.loads(line) for line in (root / EVENTS).read_text().splitlines()]


def test_progress_lines_name_the_run_and_show_every_tenth_step():
    base = {"run": "rloo-abc", "label": "uniform, seed 2", "event": "step", "steps": 60, "seconds": 2.0}
    shown = [s for s in range(60) if progress_line({**base, "step": s}) is not None]
    assert shown == [0, 9, 19, 29, 39, 49, 59]
    assert progress_line({**base, "step": 29}) == (
        "train    rloo-abc (uniform, seed 2): step 30/60, 2.00 s/step, ~1.0 min left"
    )
    assert (
        progress_line({**base, "event": "reuse"})
        == "reuse    rloo-abc (uniform, seed 2): finished earlier, reused"
    )
    assert "waiting" in progress_line({**base, "event": "wait"})
    assert progress_line({**base, "event": "done", "seconds": 150.0}).endswith("finished in 2.5 min")
    assert progress_line({**base, "event": "something else"}) is None


def test_describe_labels_a_config_by_sampler_and_seed():
    assert describe({"sampler": "fixed_v1", "seed": 3}) == "fixed_v1, seed 3"
    assert describe({"seed": 0}) == "seed 0"
    assert describe({"x": 1}) == "dict"
    filtered = {"sampler": "uniform", "seed": 1, "group_filter": {"name": "band_pass", "low": 0.2}}
    assert describe(filtered) == "uniform + band_pass, seed 1"


def test_read_events_leaves_a_half_written_line_for_later(tmp_path):
    record_event(tmp_path, "r1", "seed 0", "start")
    with open(tmp_path / EVENTS, "a") as handle:
        handle.write("not json\n")
        handle.write('{"run": "r1", "event": "do')
    events, offset = read_events(tmp_path / EVENTS, 0)
    assert [e["event"] for e in events] == ["start"]  # the bad line is skipped, the partial one waits
    with open(tmp_path / EVENTS, "a") as handle:
        handle.write('ne"}\n')
    events, _ = read_events(tmp_path / EVENTS, offset)
    assert events == [{"run": "r1", "event": "done"}]


def test_record_event_on_an_unwritable_store_loses_only_the_line(tmp_path):
    record_event(tmp_path / "missing" / "folder", "r1", "seed 0", "start")  # no exception


def test_watch_writes_lines_for_new_events_only(tmp_path):
    record_event(tmp_path, "old", "seed 0", "start")
    lines = []
    with watch(tmp_path, write=lines.append, interval=0.05):
        record_event(tmp_path, "r1", "seed 1", "start")
        time.sleep(0.2)
        assert lines == ["start    r1 (seed 1): started"]  # written while the block runs
        record_event(tmp_path, "r1", "seed 1", "step", step=3, steps=60, seconds=1.0)  # not shown
        record_event(tmp_path, "r1", "seed 1", "done", seconds=60.0)
    assert lines == ["start    r1 (seed 1): started", "done     r1 (seed 1): finished in 1.0 min"]


def test_store_logs_start_done_then_reuse(tmp_path):
    store = RunStore.open({"seed": 4, "sampler": "uniform"}, root=tmp_path, prefix="t")
    store.complete(lambda s: {"value": 1})
    RunStore.open({"seed": 4, "sampler": "uniform"}, root=tmp_path, prefix="t").complete(
        lambda s: {"value": 2}
    )
    events = events_of(tmp_path)
    assert [e["event"] for e in events] == ["start", "done", "reuse"]
    assert {e["run"] for e in events} == {store.run_id}
    assert events[0]["label"] == "uniform, seed 4"


def test_store_logs_a_failed_run(tmp_path):
    def broken(store):
        raise ValueError("bad config")

    with pytest.raises(ValueError):
        RunStore.open({"seed": 0}, root=tmp_path, prefix="t").complete(broken)
    assert events_of(tmp_path)[-1]["event"] == "failed"
    assert events_of(tmp_path)[-1]["error"] == "ValueError: bad config"


def test_store_logs_waiting_for_a_run_another_holder_has(tmp_path):
    store = RunStore.open({"seed": 0}, root=tmp_path, prefix="t")
    holding, release = threading.Event(), threading.Event()

    def holder():
        with store.lock():
            holding.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(5)
    threading.Timer(0.3, release.set).start()
    RunStore.open({"seed": 0}, root=tmp_path, prefix="t").complete(lambda s: {"value": 1})
    thread.join()
    assert [e["event"] for e in events_of(tmp_path)] == ["wait", "start", "done"]
