# tmlir: the two commands a fresh clone needs are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test pytest lit venv clean

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

clean:
	rm -rf $(VENV) build *.egg-info
