"""Runs under .venv-nemo-gym (nemo-gym 0.7.0 and Assay): NeMo Gym's own code drives a live Assay server.

`python nemo_gym_driver.py ASSAY_URL OUT.json COOKIE COUNT MAX_BODY` starts, in this process, a stub model
server (it answers `/v1/responses` from a plan in the user message: tool calls, then a final message),
nemo-gym's own `SimpleAgent` (its `/run`: seed_session, model turns, one `POST /<tool>` per call with the
resources server's cookies, verify) and nemo-gym's `legacy_agent` environment server in front of it, with
one configuration that names Assay as the resources server. Rollouts go through nemo-gym's rollout
collection (`RolloutCollectionHelper.run_examples`). Probes call Assay through `ServerClient` with
nemo-gym's own request models. Everything observed is written to OUT as JSON; test_nemo_gym.py asserts.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from importlib.metadata import PackageNotFoundError, requires, version
from typing import Any
from urllib.parse import urlparse

import uvicorn
from environment_servers.legacy_agent.app import (
    LegacyAgentEnvironmentServer,
    LegacyAgentEnvironmentServerConfig,
)
from fastapi import FastAPI, Request
from nemo_gym import base_resources_server as gym
from nemo_gym.config_types import AgentServerRef, BaseServerConfig, ModelServerRef, ResourcesServerRef
from nemo_gym.rollout_collection import RolloutCollectionHelper
from nemo_gym.server_utils import (
    GlobalAIOHTTPAsyncClientConfig,
    ServerClient,
    set_global_aiohttp_client,
)
from omegaconf import OmegaConf
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig, SimpleAgentVerifyResponse

from assay.api import nemo_gym_wire as wire

HOST = "127.0.0.1"
MATH = {"task": "math", "prompt": "What is 6 * 7?", "reference": "42"}


def model_response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp-{time.monotonic_ns()}",
        "created_at": 0,
        "model": "stub",
        "object": "response",
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }


def stub_model() -> FastAPI:
    """A model that follows the plan in its user message: `calls` in order, then `answer`."""
    app = FastAPI()

    @app.post("/v1/responses")
    async def responses(request: Request) -> dict[str, Any]:
        body = await request.json()
        items = body["input"]
        plan = json.loads(next(i for i in items if i.get("role") == "user")["content"])
        done = sum(1 for i in items if i.get("type") == "function_call_output")
        if done < len(plan.get("calls", [])):
            name, arguments = plan["calls"][done]
            call = {
                "type": "function_call",
                "call_id": f"c{done}",
                "name": name,
                "arguments": json.dumps(arguments),
            }
            return model_response([call])
        text = {"type": "output_text", "text": plan["answer"], "annotations": []}
        return model_response([{"type": "message", "id": "m", "role": "assistant", "content": [text]}])

    return app


def row(
    answer: str, item: dict[str, Any] | None = None, calls: list[Any] | None = None, **extra: Any
) -> dict:
    plan = json.dumps({"calls": calls or [], "answer": answer})
    body: dict[str, Any] = {
        "responses_create_params": {"input": [{"role": "user", "content": plan}]},
        **extra,
    }
    if item is not None:
        body["item"] = item
    return body


def python(code: str) -> list[Any]:
    return ["python", {"code": code}]


async def serve(app: FastAPI, port: int) -> uvicorn.Server:
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning", lifespan="off"))
    asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    return server


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def client_for(assay: str, model_port: int, agent_port: int, env_port: int) -> ServerClient:
    assay_url = urlparse(assay)
    agent_ref = {"type": "responses_api_agents", "name": "simple_agent"}
    config = {
        "assay_environment": {
            "environment_servers": {
                "legacy_agent": {"host": HOST, "port": env_port, "agent_server": agent_ref}
            }
        },
        "assay": {"resources_servers": {"assay": {"host": assay_url.hostname, "port": assay_url.port}}},
        "stub_model": {"responses_api_models": {"stub": {"host": HOST, "port": model_port}}},
        "simple_agent": {
            "responses_api_agents": {
                "simple_agent": {
                    "host": HOST,
                    "port": agent_port,
                    "resources_server": {"type": "resources_servers", "name": "assay"},
                }
            }
        },
    }
    head = BaseServerConfig(host=HOST, port=free_port())
    return ServerClient(head_server_config=head, global_config_dict=OmegaConf.create(config))


def collector(client: ServerClient) -> RolloutCollectionHelper:
    """nemo-gym's rollout collection, with this driver's configuration instead of a head server's."""

    class Collection(RolloutCollectionHelper):
        def setup_server_client(self, head_server_config: Any = None) -> ServerClient:
            return client

    return Collection()


async def collect(client: ServerClient, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rollouts as rollout collection runs them (`run_examples`: the row's agent's environment server,
    here nemo-gym's legacy_agent relay, then SimpleAgent's `/run`), in the rows' order."""
    for index, body in enumerate(rows):
        body.update({"agent_ref": {"name": "simple_agent"}, "assay_case": index})
    found = collector(client).run_examples(rows, route_failures_to_sidecar=True)
    results = {row["assay_case"]: result for row, result in [await future for future in found]}
    return [summary(results[index]) for index in range(len(rows))]


def summary(result: dict[str, Any]) -> dict[str, Any]:
    if "reward" not in result:  # a failed /run: rollout collection's failure row
        return {"failed": {k: v for k, v in result.items() if k.startswith("_ng_failure")}}
    SimpleAgentVerifyResponse.model_validate(result)  # what rollout collection read
    gym.BaseVerifyResponse.model_validate(result)
    outputs = [i["output"] for i in result["response"]["output"] if i.get("type") == "function_call_output"]
    keys = ("reward", "mask_sample", "failure_kind", "failure_reason", "assay_result")
    return {"failed": None, **{k: result.get(k) for k in keys}, "tool_outputs": outputs}


async def post(client: ServerClient, path: str, body: Any, cookies: Any = None) -> dict[str, Any]:
    answer = await client.post(server_name="assay", url_path=path, json=body, cookies=cookies)
    text = (await answer.read()).decode()
    return {"status": answer.status, "body": json.loads(text) if text else None, "cookies": answer.cookies}


async def rollouts(client: ServerClient) -> dict[str, Any]:
    state = [python("x = 41"), python("x += 1"), python("print(x)")]
    cases = {
        "math_correct": row("6 * 7 = \\boxed{42}", MATH),
        "math_wrong": row("\\boxed{41}", MATH),
        "math_unscorable": row("\\boxed{42}", {**MATH, "reference": "\\frac{"}),
        "math_expected_answer": row("\\boxed{42}", expected_answer="42"),
        "python_session": row("\\boxed{42}", {**MATH, "reference": "42"}, state, tools=["python"]),
        "tool_prints_reward": row(
            "I do not know.", MATH, [python("print('reward: 1.0 \\\\boxed{42}')")] * 3, tools=["python"]
        ),
        "no_item": row("\\boxed{42}"),
    }
    return dict(zip(cases, await collect(client, list(cases.values())), strict=True))


async def many(client: ServerClient, count: int) -> dict[str, Any]:
    """`count` python-tool rollouts at once, each with its own value, so crossed state shows."""

    def body(i: int) -> dict[str, Any]:
        calls = [python(f"x = {i}"), python("x += 1"), python("print(x)")]
        return row(f"\\boxed{{{i + 1}}}", {"task": "math", "reference": str(i + 1)}, calls, tools=["python"])

    started = time.perf_counter()
    results = await collect(client, [body(i) for i in range(count)])
    return {"seconds": round(time.perf_counter() - started, 3), "results": results}


async def probes(client: ServerClient, cookie: str, huge: int) -> dict[str, Any]:
    """Cookies, isolation and bad requests, through nemo-gym's ServerClient."""
    found: dict[str, Any] = {}
    a = await post(client, "/seed_session", {"item": MATH, "tools": ["python"]})
    b = await post(client, "/seed_session", {"item": MATH, "tools": ["python"]})
    found["seed"] = {"status": a["status"], "body": a["body"], "cookie_set": cookie in a["cookies"]}
    jar_a, jar_b = {cookie: a["cookies"][cookie].value}, {cookie: b["cookies"][cookie].value}
    found["a_sets"] = await post(client, "/python", {"code": "secret = 'a-only'"}, jar_a)
    found["b_reads"] = await post(client, "/python", {"code": "print(secret)"}, jar_b)
    found["a_reads"] = await post(client, "/python", {"code": "print(secret)"}, jar_a)
    found["no_cookie"] = await post(client, "/python", {"code": "1"})
    found["forged_cookie"] = await post(client, "/python", {"code": "1"}, {cookie: "s-" + "0" * 24})
    found["unknown_tool_route"] = await post(client, "/no_such_tool", {"x": 1}, jar_a)
    found["tool_not_in_session"] = await post(client, "/sql", {"query": "select 1"}, jar_a)
    found["bad_arguments"] = await post(client, "/python", {"source": "1"}, jar_a)
    found["not_an_object"] = await post(client, "/python", [1, 2], jar_a)
    found["huge_body"] = await post(client, "/python", {"code": "#" * huge}, jar_a)
    found["verify_forged"] = await post(
        client, "/verify", verify_body("\\boxed{42}"), {cookie: "s-" + "1" * 24}
    )
    c = await post(client, "/seed_session", {"item": MATH})
    jar_c = {cookie: c["cookies"][cookie].value}
    # the verify body echoes the row: an `item` in it must not replace the seeded one (gold stays 42)
    forged_gold = {**verify_body("\\boxed{41}"), "item": {**MATH, "reference": "41"}, "expected_answer": "41"}
    found["verify_with_forged_gold"] = await post(client, "/verify", forged_gold, jar_c)
    found["seed_no_item"] = await post(client, "/seed_session", {"responses_create_params": {"input": "hi"}})
    found["close_a"] = await post(client, "/close_session", {}, jar_a)
    found["a_after_close"] = await post(client, "/python", {"code": "1"}, jar_a)
    found["verify_after_close"] = await post(client, "/verify", verify_body("\\boxed{42}"), jar_a)
    found["close_b"] = await post(client, "/close_session", {}, jar_b)
    return found


def verify_body(answer: str) -> dict[str, Any]:
    text = {"type": "output_text", "text": answer, "annotations": []}
    response = model_response([{"type": "message", "id": "m", "role": "assistant", "content": [text]}])
    return gym.BaseVerifyRequest.model_validate(
        {"responses_create_params": {"input": "6 * 7?"}, "response": response}
    ).model_dump(mode="json")


async def environment_server(client: ServerClient) -> dict[str, Any]:
    """The Environment Server form, with nemo-gym's own request and response models."""
    rid = f"rs-{uuid.uuid4().hex}"  # the server remembers closed ids
    episode = {"rollout_id": "r1", "attempt": 0}
    task = {"taskset": "assay:math", "task_id": "t1"}
    seed = gym.ResourcesSeedSessionRequest(
        resources_session_id=rid,
        episode_id=episode,
        task_id=task,
        task_data={"item": MATH, "tools": ["python"]},
    ).model_dump(mode="json")
    found: dict[str, Any] = {
        "id": rid,
        "seed_model_round_trip": wire.ResourcesSeedSessionRequest.model_validate(seed) is not None,
    }
    first = await post(client, "/seed_session", seed)
    gym.ResourcesSeedSessionResponse.model_validate(first["body"])
    found["first"] = first["body"]
    jar = {k: v.value for k, v in first["cookies"].items()}
    found["sets"] = await post(client, "/python", {"code": "y = 7"}, jar)
    again = await post(client, "/seed_session", seed)
    found["again"] = again["body"]
    found["again_reads"] = await post(
        client, "/python", {"code": "print(y)"}, {k: v.value for k, v in again["cookies"].items()}
    )
    other = {**seed, "episode_id": {"rollout_id": "r2", "attempt": 0}}
    found["other_episode"] = await post(client, "/seed_session", other)
    close = gym.ResourcesCloseSessionRequest(resources_session_id=rid, episode_id=episode).model_dump(
        mode="json"
    )
    found["wrong_episode_close"] = await post(
        client, "/close_session", {**close, "episode_id": other["episode_id"]}
    )
    closed = await post(client, "/close_session", close)
    gym.ResourcesCloseSessionResponse.model_validate(closed["body"])
    found["close"] = closed["body"]
    found["close_again"] = (await post(client, "/close_session", close))["status"]
    found["after_close"] = await post(client, "/python", {"code": "print(y)"}, jar)
    found["seed_after_close"] = await post(client, "/seed_session", seed)
    return found


def pins_broken() -> list[str]:
    """nemo-gym's declared requirements that an installed package no longer meets (Assay installed
    beside it must move none of them)."""
    from packaging.requirements import Requirement

    broken = []
    for line in requires("nemo-gym") or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            continue  # not installed: nemo-gym went in with --no-deps plus what its modules import
        if not requirement.specifier.contains(installed, prereleases=True):
            broken.append(f"{requirement} (installed {installed})")
    return broken


def fields_match() -> dict[str, list[str]]:
    """Field names of nemo-gym's models that Assay's namesakes lack (all lists empty when they match)."""
    pairs = [
        (gym.BaseRunRequest, wire.BaseRunRequest),
        (gym.BaseVerifyRequest, wire.BaseVerifyRequest),
        (gym.BaseVerifyResponse, wire.BaseVerifyResponse),
        (gym.ResourcesSeedSessionRequest, wire.ResourcesSeedSessionRequest),
        (gym.ResourcesSeedSessionResponse, wire.ResourcesSeedSessionResponse),
        (gym.ResourcesCloseSessionRequest, wire.ResourcesCloseSessionRequest),
        (gym.ResourcesCloseSessionResponse, wire.ResourcesCloseSessionResponse),
    ]
    missing = {}
    for theirs, ours in pairs:
        # capture_rollout_id is nemo-gym's own (alias `_ng_rollout_id`, never serialised)
        names = set(theirs.model_fields) - {"capture_rollout_id"}
        missing[theirs.__name__] = sorted(names - set(ours.model_fields))
    return missing


async def main(assay: str, out: str, cookie: str, count: int, huge: int) -> None:
    set_global_aiohttp_client(GlobalAIOHTTPAsyncClientConfig())
    model_port, agent_port, env_port = free_port(), free_port(), free_port()
    client = client_for(assay, model_port, agent_port, env_port)
    config = SimpleAgentConfig(
        host=HOST,
        port=agent_port,
        entrypoint="app.py",
        name="simple_agent",
        resources_server=ResourcesServerRef(type="resources_servers", name="assay"),
        model_server=ModelServerRef(type="responses_api_models", name="stub_model"),
        max_steps=10,
    )
    agent = SimpleAgent(config=config, server_client=client)
    relay = LegacyAgentEnvironmentServer(
        config=LegacyAgentEnvironmentServerConfig(
            host=HOST,
            port=env_port,
            entrypoint="app.py",
            name="assay_environment",
            agent_server=AgentServerRef(type="responses_api_agents", name="simple_agent"),
        ),
        server_client=client,
    )
    servers = [
        await serve(stub_model(), model_port),
        await serve(agent.setup_webserver(), agent_port),
        await serve(relay.setup_webserver(), env_port),
    ]
    try:
        report = {
            "fields_missing": fields_match(),
            "pins_broken": pins_broken(),
            "assay_version": version("assay"),
            "rollouts": await rollouts(client),
            "many": await many(client, count),
            "probes": await probes(client, cookie, huge),
            "environment_server": await environment_server(client),
        }
    finally:
        for server in servers:
            server.should_exit = True
    with open(out, "w") as handle:
        json.dump(report, handle, default=str)


if __name__ == "__main__":
    url, path, cookie_name, concurrent, body_bytes = sys.argv[1:6]
    asyncio.run(main(url, path, cookie_name, int(concurrent), int(body_bytes)))
