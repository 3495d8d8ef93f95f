# tmlir: the two commands a fresh clone needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit venv clean models

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

# The small Hugging Face models under examples/models/ (committed; remake them with this).
# Their exporter lives in its own environment: torch is not a dependency of tmlir.
MODELS_VENV := .venv-models
$(MODELS_VENV)/.installed:
	test -x $(MODELS_VENV)/bin/python || $(PYTHON) -m venv $(MODELS_VENV)
	$(MODELS_VENV)/bin/python -m pip install -q --upgrade pip
	$(MODELS_VENV)/bin/python -m pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
	$(MODELS_VENV)/bin/python -m pip install -q transformers==5.23.0 onnxscript==0.7.2 onnx==1.23.2
	touch $@

models: $(MODELS_VENV)/.installed
	$(MODELS_VENV)/bin/python examples/make_hf_models.py

clean:
	rm -rf $(VENV) $(MODELS_VENV) build *.egg-info
