"""A study read from the run store without running anything: every (method, seed) run must be finished.

``methods.run_study`` trains what is missing; the statistics that are computed from the committed runs
(``study.coverage``'s fit, a claim table rebuilt outside the notebooks) must never start a 60-step run
because a config changed. ``finished_study`` locates each run by its config and refuses, naming the run,
when one is not finished.
"""

from __future__ import annotations

from collections.abc import Sequence

from countdown_study import paths
from countdown_study.runs.store import is_finished
from countdown_study.study.methods import Method, StudyResult, gather_study, locate_config, method_config
from countdown_study.study.presets import StudyPreset, study_preset


def finished_study(methods: Sequence[Method], preset: StudyPreset | str, root=None) -> StudyResult:
    """The ``StudyResult`` of finished runs of ``methods`` at every seed of ``preset`` (module docstring)."""
    preset = study_preset(preset) if isinstance(preset, str) else preset
    root = root if root is not None else paths.runs_dir(preset.name)
    stores = {}
    for method, seed in preset.method_seeds(methods):
        store = locate_config(method.kind, method_config(method, preset, seed), root=root)
        if not is_finished(store.path):
            raise FileNotFoundError(
                f"run {store.path} ({method.name}, seed {seed}, preset {preset.name}) is not finished"
            )
        stores[method.name, seed] = store
    return gather_study(methods, preset, stores)
