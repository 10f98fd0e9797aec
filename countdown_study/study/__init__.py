"""Studies: presets, method rows per report, the notebooks' tables, seed-aware statistics.

May import every layer but ``cli``.
"""

from countdown_study.study.core import *  # noqa: F403
from countdown_study.study.core import _provenance_fields  # noqa: F401
