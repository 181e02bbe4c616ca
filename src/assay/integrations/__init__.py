"""Trainer adapters over Assay's HTTP surface: each module speaks one trainer's own interface and imports
that trainer only when used (no torch needed). Each names the trainer version its tests ran (the tests run
the trainers' own code) and the settings a user must match.

Reward hooks:
- `trl.AssayReward`: a TRL `reward_funcs` callable; a non-ok result is None, which TRL skips.
- `verl.compute_score`: verl 0.9's custom reward function (`naive` manager); `compute_score_batch` for the
  legacy batch manager.
- `openrlhf`: OpenRLHF posts to Assay's `POST /get_reward` directly; helpers build its request shape.
- `slime.reward`: slime's `--custom-rm-path` function (one sample or a group).
- `clients`: the URL, the per-process clients and the "no reward" rule the hooks share, and
  `RolloutAborted`, which the tool adapters raise past a trainer's tool loop.

Tools and environments over Assay sessions (issue 25): `verl_tools` (verl `BaseTool` subclasses),
`trl_env`, `skyrl_gym` (a SkyRL-gym environment in its registry). The server side of verl-tool's and
OpenEnv's protocols is routes, so it lives in `assay.api` (`verl_tool`, `openenv`).
"""
