# tmlir: the two commands a fresh clone needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit venv clean models full-models gpu-wheels gpu-suite

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/make_mlp.py examples/mlp.onnx
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python examples/demo.py examples/mlp.onnx

test: $(STAMP)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python -m pytest -q -n 2 --dist worksteal tests
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/lit -sv tests/filecheck

# The small Hugging Face models under examples/models/ (committed; remake them with this),
# and full-size ResNet-50 and BERT-base under build/models/ (too large to commit).
# Their exporter lives in its own environment: torch is not a dependency of tmlir.
# torch 2.13.0 CPU: pip's configured find-links supply torch-2.13.0+cpu where there is one;
# elsewhere `make models TORCH_INDEX=https://download.pytorch.org/whl/cpu` avoids PyPI's CUDA build.
MODELS_VENV := .venv-models
FULL_MODELS_DIR := build/models
TORCH_INDEX ?=
$(MODELS_VENV)/.installed:
	test -x $(MODELS_VENV)/bin/python || $(PYTHON) -m venv $(MODELS_VENV)
	$(MODELS_VENV)/bin/python -m pip install -q --upgrade pip
	$(MODELS_VENV)/bin/python -m pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(MODELS_VENV)/bin/python -m pip install -q transformers==5.23.0 onnxscript==0.7.2 onnx==1.23.2
	touch $@

models: $(MODELS_VENV)/.installed
	$(MODELS_VENV)/bin/python examples/make_hf_models.py

full-models: $(MODELS_VENV)/.installed
	$(MODELS_VENV)/bin/python examples/make_hf_models.py --full --out $(FULL_MODELS_DIR)

# The GPU suite (docs/gpu.md). `make gpu-wheels` fills the git-ignored .whl/ with the wheels
# a lent GPU machine lacks (CPython 3.12); `make gpu-suite` runs benchmarks/gpu/run.sh into
# GPU_OUT: on a GPU machine the whole suite, elsewhere `make gpu-suite GPU_ARGS=--dry-run`.
# Full-size models missing from build/models/ are exported with .venv-models when it exists.
GPU_OUT ?= build/gpu
GPU_ARGS ?=
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(abspath $(BIN))/python,python3)
EXPORT_PYTHON ?= $(if $(wildcard $(MODELS_VENV)/bin/python),$(abspath $(MODELS_VENV))/bin/python,$(GPU_PYTHON))

gpu-wheels:
	benchmarks/gpu/wheels.sh

gpu-suite:
	$(if $(findstring /,$(GPU_PYTHON)),PATH=$(dir $(GPU_PYTHON)):$$PATH) PYTHON=$(GPU_PYTHON) benchmarks/gpu/run.sh --out $(GPU_OUT) \
		--export-python $(EXPORT_PYTHON) $(GPU_ARGS)

clean:
	rm -rf $(VENV) $(MODELS_VENV) build *.egg-info
