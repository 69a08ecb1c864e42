"""Today's cache keys are pinned: adding request extras must not invalidate stored answers.

The expected keys were computed with the code on main *before* the extras existed, from
requests shaped like the ones the workbench sends (a generation sample with the SPEC
sampling defaults, a baseline sample, a greedy strict-JSON judge request and an LLM
labeler request), against an in-process and an HTTP scope. Literal messages keep the pin
independent of prompt wording changes elsewhere.
"""

from __future__ import annotations

import pytest

from llm.cache import CacheScope, cache_key
from llm.types import ChatMessage, ChatRequest, SamplingParams

SIM = CacheScope("sim", "sim:in-process@v1", "default")
HTTP = CacheScope("openai-api", "http://127.0.0.1:8765/v1", "sim/default")

_SYSTEM = ChatMessage("system", "Think step by step. <think><step_1>...</step_1></think>")
_GREEDY = SamplingParams(
    temperature=0.0, top_p=1.0, top_k=None, repetition_penalty=None, max_tokens=512, seed=0
)

REQUESTS: dict[str, ChatRequest] = {
    "generation": ChatRequest(
        (_SYSTEM, ChatMessage("user", "I am a vegetarian.\n\nHow should I split a bill?")),
        SamplingParams(seed=1234),
        sample_index=2,
        tag="row-key",
    ),
    "baseline": ChatRequest(
        (_SYSTEM, ChatMessage("user", "How should I split a bill?")), SamplingParams(seed=99)
    ),
    "judge": ChatRequest((ChatMessage("system", "judge"), ChatMessage("user", "case")), _GREEDY),
    "labeler": ChatRequest(
        (ChatMessage("system", "label"), ChatMessage("user", "steps")),
        _GREEDY.model_copy(update={"max_tokens": 1536, "seed": 7}),
        sample_index=1,
    ),
}

PINNED = {
    ("generation", "sim"): "1a203c0956456feaf9659a30af7071bc03eb52183abb1e3191e9c346c31d1f77",
    ("generation", "http"): "cfa4ff2f454638d099ef89118e0c3c7d2e9aaa27ca429a5fbeb7e404a362b993",
    ("baseline", "sim"): "ad7114dd63ce164d4b95c676ebc4b4142a1c045d6f2478ca1abbb5db8ff36a98",
    ("baseline", "http"): "0b8a306bff2474b81615c83fc2dffb73a927fa03717c143f57db213b9acb6981",
    ("judge", "sim"): "882102821526c7b994729e8f986113be789284760b2ddc5a2f3549035337610b",
    ("judge", "http"): "a9adf922d4b930781adebd21f1d85ad0ba9536a5f0340c91dc09523a9b6549a6",
    ("labeler", "sim"): "3a1008240218c834b9c9760a7be08ed13b98283453e5d385110b391d23867d70",
    ("labeler", "http"): "01adc1457fa06cd01a1d49241bb3df359d9c85eee074e15db8e1446b12fd1a6b",
}


@pytest.mark.parametrize(("name", "provider"), sorted(PINNED))
def test_cache_keys_of_todays_requests_are_unchanged(name: str, provider: str) -> None:
    scope = SIM if provider == "sim" else HTTP
    assert cache_key(scope, REQUESTS[name]) == PINNED[(name, provider)]
