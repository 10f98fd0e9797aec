"""The policy: tokenizer, tiny Qwen2 model, loading by name or path, and pure trace builders.

Wall: imports only ``countdown_study.countdown`` and ``countdown_study.paths``.
"""

from countdown_study.policy.model import *  # noqa: F403
from countdown_study.policy.model import _load_tokenizer  # noqa: F401
