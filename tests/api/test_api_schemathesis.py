"""A bounded schemathesis run against a live server: no 5xx, no answer off the documented schema,
every schema-valid request accepted unless it breaks a documented rule that JSON Schema cannot state, and
every schema-violating request refused (with the repository's schemathesis.toml, as `schemathesis run`).

About 50 generated cases per operation (issue 12); the server runs with the test plugins off and small
limits so generated batches stay cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import schemathesis.config
from assay_testing import LiveServer
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from pydantic import ValidationError
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from assay.api.nemo_gym_wire import ResourcesSeedSessionRequest
from assay.api.openrlhf import strip_prompt
from assay.errors import ItemError
from assay.registry import Registry
from assay.sessions import SessionLimits
from assay.settings import Settings
from assay.types import Item
from assay.validate.probes import most_probes

pytestmark = pytest.mark.slow
CONFIG = Path(__file__).resolve().parents[2] / "schemathesis.toml"

QUEUE = 64
# No 5xx; every answer's status, content type and body are the documented ones.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

Rule = Callable[[Any, httpx.Client], "int | None"]
_BODY_OPTIONAL = {"POST /openenv/reset"}  # OpenEnv clients may post no body


def _bad_group_option(group: dict[str, Any]) -> bool:
    """A group option the schema admits and the contract refuses (docs/contract.md, issue 40)."""
    shaping, rubric = group.get("shaping"), group.get("rubric")
    if shaping is not None and rubric is not None:
        return True
    if shaping is not None and shaping.get("method") == "adapt_think":
        number, file = shaping.get("reference_accuracy"), shaping.get("reference_accuracy_file")
        return (number is None) == (file is None)
    components = rubric["components"] if rubric is not None else []
    names = [c["name"] for c in components]
    return len(set(names)) != len(names) or any(
        (c.get("check") is not None and c["kind"] != "format")
        or ((c.get("min") is not None or c.get("max") is not None) and not c.get("gate"))
        for c in components
    )


def _groups_total(body: dict[str, Any], http: httpx.Client) -> int | None:
    """More than ASSAY_QUEUE_SIZE items summed over a request's groups is a 413 (admission, checked
    first); else a refused group option is a 422."""
    if sum(len(group["items"]) for group in body["groups"]) > QUEUE:
        return 413
    return 422 if any(_bad_group_option(group) for group in body["groups"]) else None


def _openrlhf_unscorable(body: dict[str, Any], http: httpx.Client) -> int | None:
    """/get_reward refuses a batch with an unscorable sample (503 for timeout/error; one that is invalid is
    answered 200 with no rewards), and lists that do not pair up with `query` make every sample invalid.
    Which samples are unscorable is asked of /v1/rewards, with the items /get_reward builds."""
    query, prompts, labels = body["query"], body.get("prompts"), body.get("labels")
    if any(values is not None and len(values) != len(query) for values in (prompts, labels)):
        return None
    blank = [None] * len(query)
    items = [
        {"task": "math", "prompt": p, "response": strip_prompt(q, p), "reference": lab}
        for q, p, lab in zip(query, prompts or blank, labels or blank, strict=True)
    ]
    statuses = {r["status"] for r in http.post("/v1/rewards", json={"items": items}).json()["results"]}
    return None if "invalid" in statuses else 503 if statuses - {"ok"} else None


def _validate_budget(body: dict[str, Any], http: httpx.Client) -> int | None:
    """A /v1/validate request is admitted for the most probes its tasks can need; past the queue: 413."""
    most = most_probes(Registry.from_settings(Settings()), body.get("repeats", 3))
    return 413 if len(body["tasks"]) * most > QUEUE else None


def _observation_lists(body: dict[str, Any], http: httpx.Client) -> int | None:
    """/get_observation: actions, finish and extra_fields have one entry per trajectory id."""
    count = len(body["trajectory_ids"])
    lists = [body["actions"], *(body.get(key) or [None] * count for key in ("finish", "extra_fields"))]
    return 422 if any(len(values) != count for values in lists) else None


def _openenv_reset(body: dict[str, Any] | None, http: httpx.Client) -> int | None:
    """/openenv/reset on a server without a task file (this one) needs an `item`, a session's item."""
    if not body or body.get("item") is None:
        return 422
    return _session_item({"item": body["item"], "tools": body.get("tools", ["python"])}, http)


def _session_item(body: dict[str, Any], http: httpx.Client) -> int | None:
    """/v1/sessions: the item is an Item of a registered task, without a response, and the tools are
    ones GET /v1/tasks lists."""
    listed = http.get("/v1/tasks").json()
    tasks = {task["name"] for task in listed["tasks"]}
    tools = {tool["function"]["name"] for tool in listed["tools"]}
    try:
        item = Item.model_validate(body["item"])
    except ValidationError:
        return 422
    if (
        {"response", "messages"} & set(body["item"])
        or item.task not in tasks
        or not set(body["tools"]) <= tools
    ):
        return 422
    return None


def _nemo_gym_seed(body: dict[str, Any], http: httpx.Client) -> int | None:
    """/seed_session: the row (an Environment Server's `task_data`) needs an item (a session's item, with
    listed tools) or an `expected_answer`, and limits within the maximums."""
    if "resources_session_id" in body:
        try:
            body = ResourcesSeedSessionRequest.model_validate(body).task_data
        except ValidationError:
            return 422
    item = body.get("item")
    if item is None and "expected_answer" in body:
        item = {"task": "math", "reference": str(body["expected_answer"])}
    tools = body.get("tools", [])
    if not (isinstance(item, dict) and isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        return 422
    try:
        SessionLimits.model_validate(body.get("limits") or {}).resolved(Settings().sessions)
    except (ValidationError, ItemError):
        return 422
    return _session_item({"item": item, "tools": tools}, http)


def _nemo_gym_close(body: dict[str, Any], http: httpx.Client) -> int | None:
    """/close_session: a resources_session_id needs its episode_id."""
    return 422 if body.get("resources_session_id") is not None and body.get("episode_id") is None else None


# The rules a JSON Schema cannot state (a sum over groups, lists that pair up by position, whether an
# item can be scored), each restated here from docs/contract.md ("Rules beyond the schema") and checked
# from the request itself: a request
# that breaks one must get exactly that refusal, and any other must be accepted.
RULES: dict[str, Rule] = {
    "POST /v1/groups": _groups_total,
    "POST /get_reward": _openrlhf_unscorable,
    "POST /v1/validate": _validate_budget,
    "POST /get_observation": _observation_lists,
    "POST /v1/sessions": _session_item,
    "POST /openenv/reset": _openenv_reset,
    "POST /seed_session": _nemo_gym_seed,
    "POST /close_session": _nemo_gym_close,
}


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[Any, httpx.Client]]:
    server = LiveServer(
        Settings(
            workers=1,
            queue_size=QUEUE,
            max_body_bytes=256 * 1024,
            math={"deadline_s": 2.0},
            code={"slots": 1, "processes": 32, "tmpfs_mb": 64, "max_waiting": 4},
        )
    )
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            config = schemathesis.config.SchemathesisConfig.from_path(CONFIG)
            yield schemathesis.openapi.from_url(f"{server.url}/openapi.json", config=config), http
    finally:
        server.stop()


def check_case(case: schemathesis.Case, response: Any, http: httpx.Client) -> None:
    """The checks for one answer: a broken documented rule calls for its refusal, else acceptance."""
    rule = RULES.get(case.operation.label)
    body = case.body if isinstance(case.body, dict) else None
    applies = rule is not None and (body is not None or case.operation.label in _BODY_OPTIONAL)
    refusal = rule(body, http) if rule is not None and applies else None
    if refusal is None:
        case.validate_response(response, checks=[*CHECKS, positive_data_acceptance])
    else:
        assert response.status_code == refusal, f"{case.operation.label}: {response.text}"
        case.validate_response(response, checks=CHECKS)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_5xx_no_schema_violation_and_the_schema_says_what_is_accepted(
    live: tuple[Any, httpx.Client], mode: GenerationMode
) -> None:
    # Driven through hypothesis directly: schemathesis's pytest plugin does not load under pytest 9.
    api_schema, http = live
    calls: dict[str, int] = {}
    failures: dict[str, str] = {}
    for found in api_schema.get_all_operations():
        operation = found.ok()
        label = operation.label

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=50,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: schemathesis.Case) -> None:
            calls[label] = calls.get(label, 0) + 1  # noqa: B023 - runs inside this iteration
            response = case.call(timeout=60)
            assert response.status_code < 500, f"{label}: {response.status_code} {response.text}"  # noqa: B023
            if mode is GenerationMode.POSITIVE:
                check_case(case, response, http)
            else:
                case.validate_response(response, checks=[not_a_server_error, negative_data_rejection])

        try:
            check()
        except Unsatisfiable:
            # No request can break this operation's schema (no body, a free-text path): nothing to send.
            if mode is not GenerationMode.NEGATIVE:
                raise
        except (Exception, BaseExceptionGroup) as exc:  # every operation is tried; all are reported
            failures[label] = f"{type(exc).__name__}: {str(exc)[:1500]}"
    print("schemathesis cases per operation:", calls, "total", sum(calls.values()))
    assert not failures, "\n\n".join(f"{label}\n{text}" for label, text in failures.items())
    assert len(calls) >= 8 and sum(calls.values()) >= 8 * 40


def test_the_boundary_cases_too(live: tuple[Any, httpx.Client]) -> None:
    """schemathesis's coverage cases (each bound and one past it, each wrong type: what `schemathesis run`
    tries first, and where a lax boolean or a missing maxItems shows), checked as above."""
    api_schema, http = live
    failures: dict[str, str] = {}
    sent = 0
    for found in api_schema.get_all_operations():
        operation = found.ok()
        generation = api_schema.config.generation_for(operation=operation)
        modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
        for case in api_schema.iter_coverage_cases(
            operation, generation_modes=modes, generation_config=generation
        ):
            sent += 1
            response = case.call(timeout=60)
            try:
                assert response.status_code < 500, f"{response.status_code} {response.text}"
                if case.meta is not None and case.meta.generation.mode.is_positive:
                    check_case(case, response, http)
                else:
                    case.validate_response(response, checks=[not_a_server_error, negative_data_rejection])
            except (Exception, BaseExceptionGroup) as exc:
                failures.setdefault(operation.label, f"{type(exc).__name__}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(f"{label}\n{text}" for label, text in failures.items())
    assert sent >= 500
