"""Training stages: the RLOO loop, the IPO and SFT stages, and the pieces every run shares.

May import every lower layer (countdown, policy, rollout, objectives, samplers, evaluation, runs).
"""
