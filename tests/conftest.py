"""Fixtures shared by test modules."""

import pytest
from synthetic import TINY_MODEL

from countdown_study.policy import build_model, build_tokenizer


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory):
    """A folder holding a freshly initialised tiny policy (``TINY_MODEL``, seed 0) and its tokenizer, as
    ``save_pretrained`` writes them: a policy path for configs (modules needing the model object define
    their own ``tiny_policy``)."""
    folder = tmp_path_factory.mktemp("policy")
    tokenizer = build_tokenizer()
    build_model(tokenizer, TINY_MODEL, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
