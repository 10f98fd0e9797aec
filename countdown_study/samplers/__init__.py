"""Batch samplers: which tasks each RLOO step trains on.

``base`` holds the interface every method plugs into (read its docstring) and the uniform baselines;
each curriculum is a small module beside it; ``registry.SAMPLERS`` names them all, and
``make_sampler(name, pool, seed, **options)`` builds one (unknown names fail listing the known ones).

Adding a sampler:

1. Write one module, ``samplers/<name>.py``: a frozen config dataclass (a docstring per field, checks in
   ``__post_init__``), its presets as module constants with the report row each reproduces, and a
   ``@dataclass`` subclass of ``base.Sampler`` that declares ``config: <Config> = <PRESET>`` and
   implements the interface (``choose`` or ``next_batch``, ``observe``, ``stats``, ``state_dict`` /
   ``load_state_dict``). A run's options change config fields through the generic
   ``Sampler.from_options``; a schedule laid over the whole run gives its config a ``total_steps`` field
   and sets ``spans_run = True`` (anything else it takes from the run: override ``Sampler.run_options``),
   and the study fills it from its preset.
2. Add its line to ``registry.SAMPLERS``: ``"name": SamplerEntry(NameSampler, PRESET)``.
3. Give it a method row, ``study.Method("Label", sampler="name")``, among its report's rows
   (``study.rows``), and put the row in its notebook's entry of ``study.grid.NOTEBOOK_STUDIES``: the
   notebook reads its rows there (``study.notebook_methods``), and ``study.method_config`` builds the
   row's run config from the registry alone.
4. Where it departs from its source, add a row to ``reporting.deviations`` (or keep the rows beside the
   config, as ``feature_space.fsc_deviations``, and pass them to the notebook's table).

``tests/test_sampler_registry.py`` follows steps 1-3 with a throwaway sampler written in one file.
"""

from countdown_study.samplers.base import (
    Batch,
    Sampler,
    UniformWithoutReplacement,
    UniformWithReplacement,
)
from countdown_study.samplers.registry import (
    REFILLABLE,
    SAMPLERS,
    SamplerEntry,
    make_sampler,
    proposes_tasks,
    run_options,
    sampler_entry,
)

__all__ = [
    "REFILLABLE",
    "SAMPLERS",
    "Batch",
    "Sampler",
    "SamplerEntry",
    "UniformWithReplacement",
    "UniformWithoutReplacement",
    "make_sampler",
    "proposes_tasks",
    "run_options",
    "sampler_entry",
]
