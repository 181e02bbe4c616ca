"""SkyRL's own generator (skyrl-train 0.3.1's `SkyRLGymGenerator.generate`) over the Assay environment,
with a scripted stub model in place of the inference engine.

Run as a script under Assay's test environment with skyrl-train on the path (`.skyrl-train`, see
scripts/setup_skyrl_gym.sh): `python skyrl_generator.py URL OUT_DIR N:MODE ...`. It builds the tiny
ChatML tokenizer of tests/tiny_models.py and, for each `N:MODE`, runs N trajectories at once through the
generator (its thread pool steps the environments, its chat templating carries the observations back to
the model) and prints one JSON line: the rewards, the rollout metrics, and the observations the stub
model read. Trajectory i calls python three times (`x = i`, `x = x * 3`, `print(x)`), reads the printed
value in its prompt and answers it (even i) or it plus one (odd i). MODE `ok` gives each its gold; with
`raise` or `none` the gold is one the math task cannot parse, that is the environment's `unscored`, and
what the generator raised is printed instead.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from skyrl_train.generators.skyrl_gym_generator import SkyRLGymGenerator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_models import build_tokenizer

from assay.integrations.skyrl_gym import register

GENERATOR = {
    "max_turns": 5,
    "batched": False,
    "use_conversation_multi_turn": True,
    "chat_template": {"source": "name", "name_or_path": None},
    "chat_template_kwargs": {},
    "step_wise_trajectories": False,
    "sampling_params": {"max_generate_length": 256, "logprobs": None, "stop": None},
    "max_input_length": 4096,
    "zero_reward_on_non_stop": False,
    "apply_overlong_filtering": False,
    "append_eos_token_after_stop_str_in_multi_turn": True,
}
OUTPUT = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.DOTALL)


class ScriptedModel:
    """What the generator calls on its inference engine client: `generate` -> responses and their ids."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.read: dict[int, str] = {}  # trajectory -> the printed value the model read back

    async def generate(self, engine_input: dict[str, Any]) -> dict[str, Any]:
        (ids,) = engine_input["prompt_token_ids"]
        text = self.tokenizer.decode(ids)
        messages = OUTPUT.findall(text)  # the prompt, then each observation
        i = int(re.search(r"Trajectory (\d+)", messages[0]).group(1))  # type: ignore[union-attr]
        turn = text.count("<|im_start|>assistant") - 1
        if turn < 3:
            reply = ("<python>x = {i}</python>", "<python>x = x * 3</python>", "<python>print(x)</python>")[
                turn
            ]
            reply = reply.format(i=i)
        else:
            self.read[i] = messages[-1].strip()
            answer = int(self.read[i]) + (i % 2)
            reply = f"<answer>{answer}</answer>"
        reply_ids = [*self.tokenizer.encode(reply, add_special_tokens=False), self.tokenizer.eos_token_id]
        return {"responses": [reply], "response_ids": [reply_ids], "stop_reasons": ["stop"]}


def listing_ids(tokenizer: Any) -> Any:
    """skyrl-train 0.3.1 reads `apply_chat_template(..., tokenize=True)` as a list of ids, what
    transformers 4 returns; transformers 5 (this environment's) returns a BatchEncoding unless asked
    `return_dict=False`, so the stub's tokenizer asks that whenever the caller did not."""
    template = tokenizer.apply_chat_template

    def apply_chat_template(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("return_dict", False)
        return template(*args, **kwargs)

    tokenizer.apply_chat_template = apply_chat_template
    return tokenizer


async def run(url: str, tokenizer: Any, count: int, unscored: str) -> None:
    model = ScriptedModel(tokenizer)
    broken = unscored in ("raise", "none")
    env_config = {"assay": {"url": url, "unscored": unscored if broken else "raise"}, "max_env_workers": 32}
    generator = SkyRLGymGenerator(
        OmegaConf.create(GENERATOR), OmegaConf.create(env_config), model, tokenizer, "stub"
    )
    gold = (lambda i: "\\frac{") if broken else (lambda i: str(i * 3))
    batch = {
        "prompts": [[{"role": "user", "content": f"Trajectory {i}: what is {i} * 3?"}] for i in range(count)],
        "env_classes": ["assay"] * count,
        "env_extras": [{"reward_spec": {"method": "rule", "ground_truth": gold(i)}} for i in range(count)],
        "sampling_params": None,
        "trajectory_ids": None,
        "batch_metadata": None,
    }
    try:
        output = await generator.generate(batch, disable_tqdm=True)
    except Exception as exc:  # what the trainer would see
        print(json.dumps({"raised": f"{type(exc).__name__}: {exc}"}))
        return
    rewards = [sum(r) if isinstance(r, list) else r for r in output["rewards"]]
    metrics = {k: v for k, v in output["rollout_metrics"].items() if k.startswith("environment/")}
    print(json.dumps({"rewards": rewards, "metrics": metrics, "read": model.read}))


def main(url: str, out_dir: Path, runs: list[str]) -> None:
    register()
    tokenizer = listing_ids(build_tokenizer(out_dir))
    for spec in runs:
        count, mode = spec.split(":")
        asyncio.run(run(url, tokenizer, int(count), mode))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
