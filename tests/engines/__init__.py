"""Real third-party inference engines for the tests (helpers, not tests).

`tiny_gguf` writes a tiny random-weight llama GGUF; `llama_server` runs llama.cpp's
OpenAI-compatible server (`llama-cpp-python[server]`) on it over loopback; `process`
starts, polls and stops any test server run as a subprocess.
"""
