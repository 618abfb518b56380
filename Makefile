# The two commands a newcomer runs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python (extra `engines`) compiles llama.cpp once per machine (~10 min on 2
# cores; pip caches the wheel): CPU only, portable, no bundled tools
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_SERVER=OFF

.PHONY: install llama-server gateways demo test lint bench bench-tls mutation wheel-check clean

install: $(STAMP) llama-server

# Re-install only when the project's requirements change (idempotent).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing evalkit[test,engines,ray,otlp,aws,google]; the first time on a machine this compiles llama.cpp (~10 min)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	CMAKE_BUILD_PARALLEL_LEVEL=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) \
	$(BIN)/python -m pip install --quiet -e '.[test,engines,ray,otlp,aws,google]'
	touch $(STAMP)

# The real gateways the tests put in front of an engine (tests/engines/gateways.py):
# nginx from Debian's packages (needs root: CI and these machines run as root; the
# package's own service is not started, the tests run nginx with their own config), and
# LiteLLM's proxy in a virtualenv of its own (its dependencies pin versions ours do not
# want), every package pinned by version and SHA-256 in gateway-requirements.txt.
GATEWAY_VENV := .venv-gateway
GATEWAY_REQS := tests/engines/gateway-requirements.txt
gateways: $(GATEWAY_VENV)/.installed
	@test -x /usr/sbin/nginx || { echo "installing nginx (Debian's package)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx >/dev/null; }; }
	@test -x /usr/sbin/nginx || { echo "nginx is missing and could not be installed"; exit 1; }

$(GATEWAY_VENV)/.installed: $(GATEWAY_REQS)
	test -x $(GATEWAY_VENV)/bin/python || $(PY) -m venv $(GATEWAY_VENV)
	$(GATEWAY_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps \
		-r $(GATEWAY_REQS)
	@# a .pth file runs at every interpreter start (how litellm 1.82.8 stole credentials):
	@# none of these packages ships one
	@! find $(GATEWAY_VENV)/lib -name '*.pth' ! -name 'distutils-precedence.pth' | grep .
	touch $@

# llama.cpp's own C++ server, which the tests probe with parallel slots
# (tests/engines/native_server.py): built from the sdist the `engines` extra pins, once per
# machine (17 CPU-minutes: ~10 min on 2 idle cores; 49 min measured niced on a loaded
# machine), cached under ${XDG_CACHE_HOME:-~/.cache}/evalkit/ so a
# second clone does not rebuild it; after that, one `--version` check (tools/llama_server.py)
llama-server: $(STAMP)
	$(BIN)/python tools/llama_server.py

demo: install
	$(BIN)/evalkit demo

lint: install
	$(BIN)/ruff check evalkit tests bench tools
	$(BIN)/mypy evalkit

# The pure core's fast tests under coverage (floor 90 %) and the rest of the suite, each
# test once (tests/ran_once.py leaves the coverage run's tests to it). The suite itself is
# not traced: a tracer would slow the prober its accuracy tests time. tools/suite.py runs
# the timing tests in the foreground and, beside them at nice 10, the coverage run and
# then the other tests (their report follows the foreground's).
test: install gateways lint
	$(BIN)/python tools/suite.py --core-coverage

# The wheel works outside a checkout: build it, install it into a fresh virtualenv in a
# temporary folder, and run `questionnaire init`/`validate` and a one-vendor demo there
# (templates, fonts, a probe of the built-in reference endpoint, a PDF scorecard; CI runs
# this). One vendor, not three: the other two run the same installed code on other
# reference profiles, and tests/test_demo.py already runs the demo and its comparison
# (about 3 of this target's 5 minutes saved).
# The virtualenv gets no pip of its own (this venv's pip installs into it: --python) and
# no byte-code compiled ahead (Python compiles what the demo imports): on a loaded 2-core
# machine the virtualenv took 101 s -> 3 s and the install 400 s -> 103 s.
wheel-check: install
	rm -rf build/wheel-check && mkdir -p build/wheel-check
	$(BIN)/python -m pip wheel --quiet --no-deps -w build/wheel-check/dist .
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PY) -m venv --without-pip "$$tmp/venv" && \
	$(BIN)/python -m pip --python "$$tmp/venv/bin/python" install --quiet --no-compile \
		build/wheel-check/dist/evalkit-*.whl && \
	cd "$$tmp" && "$$tmp/venv/bin/evalkit" questionnaire init acme.yaml && \
	"$$tmp/venv/bin/evalkit" questionnaire validate acme.yaml && \
	"$$tmp/venv/bin/evalkit" demo --quiet --vendor forthright --out "$$tmp/demo" && \
	test -s "$$tmp/demo/forthright/scorecard.pdf" && test ! -e "$$tmp/demo/headline" && \
	echo "wheel-check: the installed wheel ran the one-vendor demo"

bench: install
	$(BIN)/python bench/run.py

# HTTPS against plain HTTP (issue 43): our TLS, asyncio's, plain; 32-512 streams, 3 runs,
# the server at nice -10 (root). Take it with the 1-minute load under ~1.5.
bench-tls: install
	$(BIN)/python bench/bench_tls.py 32,128,256,512 3 64 3 --where nice

# Mutation testing of the pure core (tools/mutation.py; by hand, not CI): one worker at
# the lowest priority, then the kill rate per module and any survivor not yet explained.
# MODULES="probe.wire.sse review.verdict" re-runs those alone and keeps the others' last results.
mutation: install
	nice -n 19 $(BIN)/python tools/mutation.py $(MODULES)

clean:
	rm -rf $(VENV) $(GATEWAY_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
