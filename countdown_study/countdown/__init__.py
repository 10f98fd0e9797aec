"""Ground truth, pure Python and numpy: tasks, generators, loading, splits, difficulty labels, solver,
features, prompts, verifier and grading.

Wall: imports nothing from torch, transformers or any other layer of the package.
"""
