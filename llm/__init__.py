"""The only code that talks to model providers (OpenAI-compatible, vLLM, the simulator)."""
