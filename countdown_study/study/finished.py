"""A study read from the run store without running anything: every (method, seed) run must be finished.

``methods.run_study`` trains what is missing; the statistics that are computed from the committed runs
(``study.coverage``'s fit, a claim table rebuilt outside the notebooks) must never start a 60-step run
because a config changed. ``finished_study`` locates each run by its config and refuses, naming the run,
when one is not finished.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from countdown_study.runs.store import is_finished
from countdown_study.study.methods import Method, StudyResult, locate_config, method_config
from countdown_study.study.presets import StudyPreset, study_preset


def finished_study(methods: Sequence[Method], preset: StudyPreset | str, root=None) -> StudyResult:
    """The ``StudyResult`` of finished runs of ``methods`` at every seed of ``preset`` (module docstring)."""
    preset = study_preset(preset) if isinstance(preset, str) else preset
    runs, samples, steps = [], [], []
    for method in methods:
        for seed in preset.seeds:
            store = locate_config(method.kind, method_config(method, preset, seed), root=root)
            if not is_finished(store.path):
                raise FileNotFoundError(
                    f"run {store.path} ({method.name}, seed {seed}, preset {preset.name}) is not finished"
                )
            runs.append({"method": method.name, "seed": seed, "kind": method.kind, "run_id": store.run_id,
                         "path": str(store.path)})  # fmt: skip
            samples.append(store.read_table("eval").assign(method=method.name, seed=seed))
            log = store.read_steps()
            if log and method.kind == "rloo":
                steps.append(pd.DataFrame(log).assign(method=method.name, seed=seed))
    return StudyResult(
        preset=preset,
        runs=pd.DataFrame(runs),
        samples=pd.concat(samples, ignore_index=True),
        steps=pd.concat(steps, ignore_index=True) if steps else pd.DataFrame(),
        methods=tuple(m.name for m in methods),
    )
