# The two set-up commands of the README: `make demo` and `make test`. Both build everything they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv deps demo test lint bench chaos

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

deps: venv
	bash integration/install.sh

demo: venv
	$(VENV)/bin/ytqueue demo

test: deps
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q --durations=60

lint: venv
	$(VENV)/bin/ruff check .

bench: deps
	$(PY) bench/bench_local_server.py
	$(PY) bench/bench_ytqueue_source.py
	$(PY) bench/bench_scale.py
	$(PY) bench/bench_kafka_source.py --rounds 2
	$(PY) bench/bench_sinks.py
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) bench/bench_latency.py
	$(PY) bench/bench_kudu_sink.py
	$(PY) bench/bench_hbase_sink.py
	$(PY) bench/memory.py

# The long chaos run (kills, restarts, exactly-once check); CHAOS_ARGS="--kills 20 --rows 1000000 --seconds 600".
chaos: deps
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) bench/chaos.py $(CHAOS_ARGS)
