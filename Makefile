# The two set-up commands of the README: `make demo` and `make test`. Both build everything they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv deps demo test test-matrix test-oldest lint bench chaos

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

# pytest writes its JUnit report only when the session ends normally: a run that a test ended early (os._exit in the
# pytest process, exit code 0) leaves none, and fails here instead of passing with the rest of the suite unrun.
SUMMARY_CHECK = @test -s $(1) || { echo "pytest ended without its summary ($(1)): a test ended the pytest process early"; exit 1; }

test: deps
	rm -f .pytest-summary.xml
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q --durations=60 \
		--junitxml=.pytest-summary.xml
	$(call SUMMARY_CHECK,.pytest-summary.xml)

# Every maintained PySpark 4 line, one virtual environment each (.venv-4.0 ... .venv-4.3), running the unit tests,
# the contract suites (stores, backends, the shared stream scenarios), the driver log's note on capped one-batch
# AvailableNow runs (4.0/4.1), the wheel in a fresh environment pinned to the line through the README's steps, and
# one smoke test each of what else differs by line (LINE_SMOKE); `make test` runs everything on the newest.
SPARK_LINES := 4.0.5 4.1.4 4.2.1 4.3.0
# Auto-registration of all three formats (no register()), a Kafka query's own group (in the driver log on every line),
# the Kudu sink resuming from its store (the stores' contract covers HBase's), the transactional mode, and the
# dead-letter targets of every sink (YT table, Kafka topic, Kudu, HBase; their queries run to the end on every line).
LINE_SMOKE := \
	tests/packaging/test_wheel_discovery.py::test_editable_install_is_discovered_from_a_notebook_elsewhere \
	tests/kafka/test_kafka_default_group.py \
	tests/kudu/test_kudu_stream.py::test_append_keyed_by_source_coordinates_resumes_from_kudu \
	tests/yt/test_transactional.py::test_filter_pipeline_commits_with_its_consumer_and_a_replay_writes_nothing \
	tests/yt/test_dead_letter.py
LINE_TESTS := tests/unit tests/contract tests/yt/test_available_now_note.py tests/packaging/test_wheel_readme.py \
	$(LINE_SMOKE)
MATRIX_TESTS ?= $(LINE_TESTS)

.venv-%/.installed: pyproject.toml
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-$*/bin/python -m pip install --quiet -e '.[dev]' 'pyspark[connect]==$(filter $*.%,$(SPARK_LINES))'
	touch $@

.PRECIOUS: .venv-%/.installed

test-line-%: .venv-%/.installed
	bash integration/install.sh
	rm -f .pytest-summary-$*.xml
	PYSPARK_PYTHON=$(abspath .venv-$*/bin/python) PYSPARK_DRIVER_PYTHON=$(abspath .venv-$*/bin/python) \
		.venv-$*/bin/python -m pytest -q -p no:cacheprovider --junitxml=.pytest-summary-$*.xml $(MATRIX_TESTS)
	$(call SUMMARY_CHECK,.pytest-summary-$*.xml)

test-matrix: $(foreach line,$(SPARK_LINES),test-line-$(basename $(line)))

# The oldest line only: what CI runs beside `make test` (the newest line, whole suite). The outage scenarios of the
# stream contract (minutes of real outages) run on the newest line only, for CI's time.
test-oldest: MATRIX_TESTS = $(LINE_TESTS) --ignore=tests/contract/streams/test_yt_outages.py \
	--ignore=tests/contract/streams/test_kafka_outages.py
test-oldest: test-line-$(basename $(firstword $(SPARK_LINES)))

lint: venv
	$(VENV)/bin/ruff check .

bench: deps
	$(PY) bench/bench_local_server.py
	$(PY) bench/bench_dsv_writer.py
	$(PY) bench/bench_driver_read.py
	$(PY) bench/bench_ytqueue_source.py
	$(PY) bench/bench_scale.py
	$(PY) bench/bench_kafka_source.py --rounds 2
	$(PY) bench/bench_sinks.py
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) bench/bench_latency.py
	$(PY) bench/bench_kudu_sink.py
	$(PY) bench/bench_hbase_sink.py
	$(PY) bench/memory.py
	$(PY) bench/bench_worker_startup.py

# The long chaos run (kills, restarts, exactly-once check); CHAOS_ARGS="--kills 20 --rows 1000000 --seconds 600".
chaos: deps
	PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) $(PY) bench/chaos.py $(CHAOS_ARGS)
