"""Real third-party inference engines for the tests (helpers, not tests).

`tiny_gguf` writes a tiny random-weight llama GGUF; `llama_server` runs
llama-cpp-python's OpenAI-compatible server on it over loopback (serial: one request at
a time); `native_server` runs llama.cpp's own C++ `llama-server` (parallel slots,
continuous batching, `--metrics`), built by `make install` (`tools/llama_server.py`);
`process` starts, polls and stops any test server run as a subprocess.
"""
