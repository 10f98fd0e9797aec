# Targets mirror the README: `make study` runs every notebook at the quick preset, `make test` the tests.
PY ?= python
PRESET ?= quick

.PHONY: install study test lint format bench bench-gpu sft sft-search paper

install:
	$(PY) -m pip install torch==2.13.0 -e ".[dev]"

study:
	countdown-study run --preset $(PRESET)

test:
	$(PY) -m pytest -q

lint:
	ruff format --check . && ruff check .

format:
	ruff format . && ruff check --fix .

sft:
	countdown-study sft --ship

sft-search:
	countdown-study sft --recipe search --ship

paper:
	countdown-study paper

# The CPU benchmarks (each writes its JSON into benchmarks/results/); the GPU ones need a CUDA device.
GPU_BENCHES = benchmarks/bench_gpu.py benchmarks/bench_packed_grid.py

bench:
	for b in $(filter-out $(GPU_BENCHES),$(wildcard benchmarks/bench_*.py)); do $(PY) $$b || exit 1; done

bench-gpu:
	bash benchmarks/gpu_check.sh
