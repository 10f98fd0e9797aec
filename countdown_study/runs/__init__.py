"""The run store: run ids, atomic files, provenance, locks, checkpoints, executors.

May import only ``countdown_study.paths``, ``countdown_study.seeding`` and ``countdown_study.checksums``:
it sits below every model layer (the package docstring lists the layers in order).
"""
