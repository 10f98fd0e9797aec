"""``countdown-study runs import``: finished runs brought from another store whole, checked, clean, and
never over a run that is as good as the incoming one."""

import json

from countdown_study.cli import main
from countdown_study.runs.store import RunStore
from countdown_study.runs.transfer import STAGING_PREFIX


def _finished(root, name, results=None, sha="a" * 40, dirty=False, transformers=None):
    """A finished run of config ``{"name": name}`` under ``root`` (the same run id in every store), with
    its provenance's commit, dirty flag and, when given, transformers version set."""
    store = RunStore.open({"name": name}, root=root)
    store.start(seed=0)
    store.finish(results or {"pass@1": 0.5})
    record = store.provenance()
    record.update(git_sha=sha, git_dirty=dirty)
    if transformers:
        record["packages"] = {**record["packages"], "transformers": transformers}
    (store.path / "provenance.json").write_text(json.dumps(record))
    return store


def test_import_copies_clean_finished_runs_and_refuses_the_rest(tmp_path, capsys):
    source, root = tmp_path / "grid" / "runs", tmp_path / "main" / "runs"
    new = _finished(source, "new")
    (new.path / "checkpoints").mkdir()
    (new.path / "checkpoints" / "step-10.pt").write_bytes(b"weights")
    (new.path / "samples.parquet").write_bytes(b"raw")
    dirty = _finished(source, "dirty", dirty=True)
    corrupt = _finished(source, "corrupt")
    (corrupt.path / "results.json").write_text('{"pass@1": 0.9}')  # edited after it finished
    unfinished = RunStore.open({"name": "unfinished"}, root=source)
    unfinished.start(seed=0)
    kept = _finished(source, "kept")
    _finished(root, "kept")  # the same run, the same commit and results here
    _finished(source, "shared-dirty", dirty=True)
    _finished(root, "shared-dirty", dirty=True)  # already here as it is: not refused again
    retrained = _finished(source, "retrained", sha="b" * 40)  # retired there, trained again from a clean tree
    _finished(root, "retrained", transformers="0.0.1")
    other = _finished(source, "other", sha="c" * 40)
    _finished(root, "other", results={"pass@1": 0.25})  # clean here too, another commit: a conflict

    assert main(["runs", "import", str(source), "--root", str(root), "--dry-run"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0]
        == f"refused {corrupt.run_id} (corrupt: {corrupt.path / 'results.json'}: changed since the run finished)"
    )
    assert lines[1] == f"refused {dirty.run_id} (made from a dirty tree at aaaaaaaaaaaa)"
    assert lines[2] == f"would import {new.run_id}"
    assert lines[3].startswith(
        f"refused {other.run_id} (conflict with the run here (here aaaaaaaaaaaa, incoming cccccccccccc; "
    )
    assert lines[3].endswith("results differ))")
    assert lines[4].startswith(
        f"would replace {retrained.run_id} (the run here was made in another environment (transformers: 0.0.1 vs "
    )
    assert lines[4].endswith("); results identical)")
    assert lines[5] == (
        f"7 finished runs in {source}: 1 would be imported, 1 would be replaced, 2 already here, 3 refused"
    )
    assert len(lines) == 6 and not (root / new.run_id).exists()  # a dry run changes nothing

    assert main(["runs", "import", str(source), "--root", str(root)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"7 finished runs in {source}: 1 were imported, 1 were replaced, 2 already here, 3 refused"
    )
    copied = root / new.run_id
    assert sorted(p.name for p in copied.iterdir()) == [
        "DONE",
        "config.json",
        "provenance.json",
        "results.json",
    ]
    assert RunStore(new.run_id, copied, None).verify() == []
    assert json.loads((root / retrained.run_id / "provenance.json").read_text())["git_sha"] == "b" * 40
    old = tmp_path / "main" / "runs.retired" / retrained.run_id
    assert json.loads((old / "provenance.json").read_text())["packages"]["transformers"] == "0.0.1"
    assert json.loads((root / other.run_id / "results.json").read_text()) == {"pass@1": 0.25}  # untouched
    assert not (root / dirty.run_id).exists() and not (root / corrupt.run_id).exists()
    assert not (root / unfinished.run_id).exists() and (root / kept.run_id).is_dir()
    assert not [p for p in root.iterdir() if p.name.startswith(STAGING_PREFIX)]

    assert main(["runs", "import", str(source), "--root", str(root)]) == 1  # again: nothing left to do
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"7 finished runs in {source}: 0 were imported, 0 were replaced, 4 already here, 3 refused"
    )


def test_import_never_overwrites_a_retired_copy_and_refuses_its_own_store(tmp_path, capsys):
    source, root = tmp_path / "grid", tmp_path / "runs"
    run = _finished(source, "retrained")
    _finished(root, "retrained", dirty=True)
    (tmp_path / "runs.retired" / run.run_id).mkdir(parents=True)
    assert main(["runs", "import", str(source), "--root", str(root)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"countdown-study runs: error: already retired under {tmp_path / 'runs.retired'}: {run.run_id}"
    )
    assert json.loads((root / run.run_id / "provenance.json").read_text())["git_dirty"] is True
    assert main(["runs", "import", str(root), "--root", str(root)]) == 2
    assert f"the source store is this store: {root}" in capsys.readouterr().err
    assert main(["runs", "import", str(tmp_path / "nowhere"), "--root", str(root)]) == 2
    assert f"no run store at {tmp_path / 'nowhere'}" in capsys.readouterr().err
