"""The run store: run ids, atomic files, provenance, locks, checkpoints, executors.

May import only ``countdown_study.paths`` and ``countdown_study.seeding``.
"""
