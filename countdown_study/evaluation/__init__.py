"""Evaluation: pass@k tables (no torch) and sampling-based evaluation of a policy.

May import countdown, policy, rollout and runs; never training or study.
"""
