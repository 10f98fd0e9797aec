"""Evaluation: pass@k tables (no torch), sampling-based evaluation of a policy, the config core every run
shares (``config``: ``DataSpec``, ``EvalSpec``, ``RunConfig``) and a policy evaluated inside a run
(``run``: a run's final and checkpoint evaluations, the evaluation-only run).

May import countdown, policy, rollout and runs; never training or study.
"""
