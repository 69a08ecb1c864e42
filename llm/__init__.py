"""The only code that talks to model providers (OpenAI-compatible, vLLM, the simulator).

Public entry points (import from the submodules; nothing heavy is imported here):

* ``llm.types`` — SamplingParams, ChatMessage, ChatRequest, ChatResult, ChatBackend.
* ``llm.specs.parse_spec`` / ``ModelSpec`` — ``provider/model`` specs.
* ``llm.batch.run_chat_batch`` / ``arun_chat_batch`` / ``get_backend`` — cached batches.
* ``llm.sim`` / ``SimServer`` (``llm.sim.server``) — the generic simulator (what each
  instrument's simulated models write lives in ``study/<instrument>/sim/``).
"""
