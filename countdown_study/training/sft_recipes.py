"""The shipped policies' recipes: for each, the SFT config that trains it, its name, how its quality is
measured and the goal it should meet (``countdown-study sft --recipe NAME --ship``).

* ``solver`` -> ``embedded`` (``SFTConfig()``: 3.4M parameters, 4,000 steps of 64 solver traces);
* ``search`` -> ``embedded-search`` (``embedded`` continued on search traces, report 003's policy);
* ``small`` -> ``embedded-small`` and ``large`` -> ``embedded-large``: the solver recipe at about a quarter
  and about 3.4 times the parameters, for the scale study (``study.scale``, notebook 09).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from countdown_study.policy import EMBEDDED_POLICIES, TinyModelConfig
from countdown_study.policy.traces import SearchRecipe
from countdown_study.rollout import SamplingConfig
from countdown_study.training.sft_config import SFTConfig
from countdown_study.training.sft_ship import (
    QUALITY_GOAL,
    QUALITY_SAMPLING,
    SCALE_QUALITY_GOAL,
    SEARCH_QUALITY_GOAL,
    SEARCH_QUALITY_SAMPLING,
    STUDY_QUALITY_SAMPLING,
    WEIGHT_DTYPES,
)

SEARCH_CONFIG = SFTConfig(
    steps=300,
    batch_size=32,
    lr=5e-4,
    warmup_steps=20,
    decay_fraction=0.3,
    threads=1,
    checkpoint_every=50,
    log_every=10,
    init_from="embedded",
    search=SearchRecipe(give_up_share=0.2, abandon_share=0.2),
)
"""The ``embedded-search`` run: the shipped ``embedded`` weights continued for 300 steps of 32 search
traces (9,600 traces, about 15 minutes on one thread) at a third of the solver recipe's peak rate.
Pilots of 120 steps on 200 held-out tasks: give-up 0.3 / abandon 0.25 gave 3.51 spans, gap 0.062,
final pass@1 0.251; give-up 0.2 / abandon 0.35 gave 3.70, 0.101, 0.236. The whole run learns to abandon
more than its pilot: abandon 0.3 gave 3.70 spans, gap 0.129 (over the goal), final pass@1 0.229 on the
1,000 held-out tasks; abandon 0.2 (shipped) gives 3.53 spans, gap 0.085, final pass@1 0.269, 0.26% of
rollouts cut (``sft.json``)."""

# ---------------------------------------------------------------------------------------------------
# The scale study's sizes: the solver recipe (same traces, batch, steps and schedule) at other widths
# ---------------------------------------------------------------------------------------------------

SMALL_MODEL = TinyModelConfig(hidden_size=128, num_layers=4, num_heads=4, intermediate_size=384)
"""``embedded-small``'s shape: ``embedded``'s depth and heads at half the width (heads of 32), MLP three
times the width as ``embedded``'s: 862,592 parameters, 0.25 of ``embedded``'s 3,429,120."""
LARGE_MODEL = TinyModelConfig(hidden_size=384, num_layers=6, num_heads=6, intermediate_size=1152)
"""``embedded-large``'s shape: 1.5 times the width and depth, heads of 64 as ``embedded``'s, MLP three
times the width: 11,537,280 parameters, 3.36 times ``embedded``'s."""

SMALL_CONFIG = SFTConfig(model=SMALL_MODEL, lr=3e-3)
"""The ``embedded-small`` run: ``SFTConfig()`` but the shape and the peak rate. The rate scales as
1 / width from the solver recipe's 1.5e-3 at width 256 (Adam's update per weight is about the rate, so a
layer's output moves in proportion to width x rate: the hidden-weight rule of maximal-update
parametrisation): 3e-3 at width 128. A step took 0.53 and 0.76 of ``embedded``'s time (0.88 and 1.31 s
against 1.67 and 1.72 s in two side-by-side measurements of a few steps at two threads, with other work on
both cores): 1.2-1.7 hours for the 4,000 steps."""
LARGE_CONFIG = SFTConfig(model=LARGE_MODEL, lr=1e-3, checkpoint_every=100)
"""The ``embedded-large`` run: ``SFTConfig()`` but the shape, the peak rate and the checkpoint interval.
The rate follows the same 1 / width rule: 1e-3 at width 384 (nanoGPT's character-level model of this
shape, 6 layers, 6 heads, width 384, trains at 1e-3 too). The same 4,000 steps of 64 traces as the other
sizes, so that the sizes differ in shape only. Side by side with ``embedded`` (a few steps each, two
threads, other work on both cores) a step took 2.3, 3.3 and 2.6 times as long (3.8-5.7 s): from
``embedded``'s 2.2 hours, 5.0-7.3 hours, 5.8 at the middle ratio. A checkpoint every 100 steps (about
7 minutes of this run; ``checkpoint_every`` leaves the run id unchanged) bounds what an interruption
loses; the run resumes from it (``countdown-study sft --recipe large`` again). Its weights ship in bf16
(``Recipe.weights_dtype``): 23 MB instead of 46 MB, loaded back as float32 for training and evaluation."""


@dataclass(frozen=True)
class Recipe:
    """A shipped policy: the SFT config that trains it, its name, how its quality is measured and judged."""

    policy: str
    """Its name for ``load_policy`` (a key of ``policy.EMBEDDED_POLICIES``: the folder it ships to)."""
    config: SFTConfig
    """The run that makes it."""
    sampling: SamplingConfig
    """How its quality is measured (``measure_quality``)."""
    goal: Mapping[str, tuple[float, float]]
    """Ranges its measured quality should fall in (``quality_shortfalls``)."""
    weights_dtype: str = "float32"
    """How its weights are stored in the package (``sft_ship.WEIGHT_DTYPES``); they load as float32."""

    def __post_init__(self) -> None:
        if self.policy not in EMBEDDED_POLICIES:
            raise ValueError(
                f"recipe policy {self.policy!r} is not a shipped name: {sorted(EMBEDDED_POLICIES)}"
            )
        if self.weights_dtype not in WEIGHT_DTYPES:
            raise ValueError(
                f"weights_dtype must be one of {sorted(WEIGHT_DTYPES)}, got {self.weights_dtype!r}"
            )

    @property
    def dest(self) -> Path:
        """The package folder it ships to."""
        return EMBEDDED_POLICIES[self.policy]


RECIPES = {
    "solver": Recipe("embedded", SFTConfig(), QUALITY_SAMPLING, QUALITY_GOAL),
    "search": Recipe("embedded-search", SEARCH_CONFIG, SEARCH_QUALITY_SAMPLING, SEARCH_QUALITY_GOAL),
    "small": Recipe("embedded-small", SMALL_CONFIG, STUDY_QUALITY_SAMPLING, SCALE_QUALITY_GOAL),
    "large": Recipe(
        "embedded-large", LARGE_CONFIG, STUDY_QUALITY_SAMPLING, SCALE_QUALITY_GOAL, weights_dtype="bfloat16"
    ),
}
"""The shipped policies by recipe name (``countdown-study sft --recipe``): ``solver`` makes ``embedded``,
``search`` makes ``embedded-search``, ``small`` and ``large`` make ``embedded-small`` and
``embedded-large``."""
