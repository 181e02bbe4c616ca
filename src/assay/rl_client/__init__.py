"""`assay.rl_client`: a thin GRPO/DAPO trainer around Assay, in three layers (issue 24).

The loop (this package) is a step of Generate -> Filter -> Control -> Replay -> Loss:

    config.py     `TrainConfig`: one frozen dataclass per stage, validated with messages that say what
                  to change
    generate.py   G samples per prompt through a backend (backends/hf.py on CPU, backends/vllm.py on GPU),
                  XRPO-style hints for prompts whose whole group failed
    filter.py     rewards from Assay (`AssayClient.ascore` on a background loop, or an in-process Engine);
                  a non-ok result is masked out of the loss, never scored 0
    control.py    DAPO dynamic sampling (exact equality on raw correctness), overlong filtering and soft
                  punishment, GRESO-style prompt skipping and adaptive group sizes
    replay.py     scored groups with their policy version and a staleness limit; AR3PO-style injection
    loss.py       group-relative advantages, asymmetric clipping, token / sequence / dr_grpo aggregation, KL
    policy.py     token log-probabilities of a batch of samples
    rollout.py    one generation round (chunks scored while the next chunk generates)
    partial.py    APRIL partial rollouts: over-provision, stop the long tail, resume it next step
    multiturn.py  multi-turn tool-use rollouts on Assay sessions;  tool_calls.py: the call formats
                  (tags, the chat template's hermes markup);  partial_tools.py: APRIL on multi-turn groups
    tokenizer.py  `TextTokenizer`, the tokenizer interface of the backends and rollouts
    trainer.py    the loop and its exact-resume state;  checkpoints.py: the one checkpoint writer
    observe.py    JSON Lines step log, progress bar, PNG curves

The configured-run product, `assay train` (`assay.rl_client.runs`): a validated run config, models and
data files, one driver loop for GRPO and STaR, evaluation, demos and `--init`. Adapters that put Assay
behind other trainers (TRL, verl, OpenRLHF, slime) live in `assay.integrations`. Imports point down only:
integrations and runs use the loop, the loop uses neither.

Importing this package loads no torch; the modules that need it import it themselves.

Scaling beyond one machine: `rl_client` stays a small single-process trainer on purpose. For large runs use
verl or OpenRLHF, which already spread rollout and training over a Ray cluster, and let their reward step
call Assay: run several `assay serve` replicas (the service is stateless) behind a load balancer, or one
per node, and point the integrations at them. verl: `custom_reward_function.path` =
`assay/integrations/verl.py`, `name` = `compute_score` (or `compute_score_batch` with the batch
reward manager), and `ASSAY_URL` set in the Ray workers' environment (`runtime_env.env_vars`); each worker
process keeps its own connection pool. OpenRLHF: `--remote_rm_url http://LB:8000/get_reward` (one sample
per request; a load balancer spreads them). slime: `--custom-rm-path assay.integrations.slime.reward`.
Size replicas so the reward step stays shorter than generation: a full queue answers 429 with Retry-After,
which the client honours instead of timing out.
"""
