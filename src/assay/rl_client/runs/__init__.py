"""`assay.rl_client.runs`: the configured-run product built on the loop (`assay train`).

    command.py      `assay train --config | --init | --demo` (dispatched from `assay.cli`)
    config.py       `RunConfig`: one validated YAML/TOML file for a whole run (`--set a.b=value`)
    driver.py       `run(cfg, base)`: the one driver loop for GRPO/DAPO and STaR (resume, checkpoint every
                    `checkpoint_every`, time budget, evaluation, summary, curves, the saved model)
    session.py      what a run is built from: model, tokenizer, data, backend, rewards
    star.py         STaR (Zelikman et al., 2022) as an algorithm the driver runs;  sft.py: the one SFT step
    models.py       transformers models and tokenizers (GGUF too);  data.py: data files -> `Problem`s
    mix.py          per-task reward weights and combined rewards;  evaluate.py: greedy held-out accuracy
    vllm_server.py  the `vllm_server` backend (a vLLM server in another process)
    service.py      `assay serve` as a child process, for runs and demos that bring none
    demo.py, demo_tools.py, example.py, example_tools.py   `--demo`, `--demo tools`, `--init DIR [--tools]`

Imports point down only: this package uses the loop (`assay.rl_client.*`); the loop never imports it.
"""
