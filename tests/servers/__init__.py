"""Servers dsh did not write, run by the tests on 127.0.0.1 (LiteLLM's OpenAI-compatible proxy)."""
