# tmlir: the two commands a fresh clone needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit venv clean models full-models

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
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python -m pytest -q -n 2 tests
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

clean:
	rm -rf $(VENV) $(MODELS_VENV) build *.egg-info
