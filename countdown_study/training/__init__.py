"""Training stages, a module (or a prefix) each, and the pieces they share:

* RLOO: ``rloo_config`` (``TrainConfig``, the presets ``cpu`` and ``paper``), ``rloo`` (one step),
  ``loop`` (the run: steps, checkpoints, evaluations, resume), ``group_filters``, ``aux`` (auxiliary
  objectives beside the RLOO loss);
* VCC, report 003's auxiliary objective: ``vcc``;
* IPO, the offline preference baseline: ``ipo``;
* SFT, the shipped policies: ``sft`` and ``sft_*``;
* the report-004 teacher (an LM proposing tasks): ``teacher``, ``teacher_data``, ``teacher_train``;
* shared: ``common`` (reference, prompts, final weights), ``specs``, ``checkpoint``, ``finite``,
  ``device``. The config core every run shares and a run's evaluations are ``evaluation.config`` and
  ``evaluation.run``, one layer down.

May import every lower layer (countdown, policy, rollout, objectives, samplers, evaluation, runs).
"""
