"""`assay.rl_client`: a thin GRPO/DAPO trainer around Assay, and adapters for other trainers.

A step is Generate -> Filter -> Control -> Replay -> Loss:

    generate.py   G samples per prompt through a backend (backends/hf.py on CPU, backends/vllm.py on GPU),
                  XRPO-style hints for prompts whose whole group failed
    filter.py     rewards from Assay (`AssayClient.ascore` on a background loop, or an in-process Engine);
                  a non-ok result is masked out of the loss, never scored 0
    control.py    DAPO dynamic sampling (exact equality on raw correctness), overlong filtering and soft
                  punishment, GRESO-style prompt skipping and adaptive group sizes
    replay.py     scored groups with their policy version and a staleness limit; AR3PO-style injection
    loss.py       group-relative advantages, asymmetric clipping, token / sequence / dr_grpo aggregation, KL
    rollout.py    one generation round (chunks scored while the next chunk generates)
    trainer.py    the loop, checkpoint and exact resume;  observe.py: JSON Lines, progress bar, PNG curves
    demo.py       `assay train --demo`: SFT then GRPO on 2-digit addition with a tiny GPT-2, on CPU
    partial.py    APRIL partial rollouts: over-provision, stop the long tail, resume it next step

`assay train --config run.yaml` (run.py) builds a run from a validated config (run_config.py): model and
tokenizer (models.py, GGUF too), data files with a field mapping and chat templates (data.py), a task mix
(mix.py), greedy evaluation (evaluate.py), checkpoints with exact resume (checkpoints.py), GRPO/DAPO
(trainer.py) or STaR (star.py, sft.py); backends hf, vllm (in-process) or vllm_server (server mode,
backends/vllm_server.py). `assay train --init DIR` (example.py) writes a runnable example.
    integrations/ TRL `reward_funcs`, verl `compute_score`, OpenRLHF / slime remote reward

Importing this package loads no torch; the modules that need it import it themselves.

Scaling beyond one machine: `rl_client` stays a small single-process trainer on purpose. For large runs use
verl or OpenRLHF, which already spread rollout and training over a Ray cluster, and let their reward step
call Assay: run several `assay serve` replicas (the service is stateless) behind a load balancer, or one
per node, and point the integrations at them. verl: `custom_reward_function.path` =
`assay/rl_client/integrations/verl.py`, `name` = `compute_score` (or `compute_score_batch` with the batch
reward manager), and `ASSAY_URL` set in the Ray workers' environment (`runtime_env.env_vars`); each worker
process keeps its own connection pool. OpenRLHF: `--remote_rm_url http://LB:8000/get_reward` (one sample
per request; a load balancer spreads them). slime: `--custom-rm-path
assay.rl_client.integrations.slime.reward`. Size replicas so the reward step stays shorter than
generation: a full queue answers 429 with Retry-After, which the client honours instead of timing out.
"""
