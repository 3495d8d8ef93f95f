"""Small random-weight Hugging Face models, exported to ONNX for tmlir's model tests.

    make models            # creates .venv-models (torch 2.13.0 CPU, transformers), runs this
    make full-models       # full-size ResNet-50, BERT-base and GPT-2 into build/models/ (--full)

Each model is built from a `transformers` config scaled down to a few layers of width
16-64 (the architecture is the real one: bottleneck ResNet, MobileNetV2's inverted
residuals, BERT and GPT-2 blocks, ViT's patch embedding), with weights from a fixed seed,
and exported with PyTorch's default exporter at static shapes. The files are small enough
to commit (`examples/models/*.onnx`); `examples/models/models.json` records how each was
made and what its inputs hold (token ids need a range), for the tests
(`tests/e2e/test_hf_models.py`).

With `--full`, the models are the full-size ones of the default configs instead:
ResNet-50 (`ResNetConfig()`, batch 1, 224x224), BERT-base (`BertConfig()`, batch 1,
sequence 128) and GPT-2 (the 124M-parameter `GPT2Config()` without the key/value cache
output, batch 1, sequence 128), random weights from the same seed, for the compile-time
benchmark (`benchmarks/model_compile.py`) and the GPU suite (`benchmarks/gpu/`). At 94,
440 and about 500 MB they are not committed: they go to the git-ignored `build/models/`
with a manifest of their own. `build_model(name)` rebuilds a model with the exported
weights, for comparing with the ONNX file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import transformers
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    MobileNetV2Config,
    MobileNetV2ForImageClassification,
    ResNetConfig,
    ResNetForImageClassification,
    ViTConfig,
    ViTForImageClassification,
)

OPSET = 18
VOCAB = 128
SEQUENCE = 16
FULL_SEQUENCE = 128
ROOT = Path(__file__).resolve().parent.parent


def image(size: int) -> dict:
    return {"pixel_values": {"shape": [1, 3, size, size], "dtype": "float32"}}


def tokens(*names: str, sequence: int = SEQUENCE, vocab: int = VOCAB) -> dict:
    spec = {"input_ids": {"shape": [1, sequence], "dtype": "int64", "range": [0, vocab]}}
    if "attention_mask" in names:
        spec["attention_mask"] = {"shape": [1, sequence], "dtype": "int64", "range": [1, 2]}
    return spec


MODELS = {
    "resnet": (lambda: ResNetForImageClassification(ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
        layer_type="bottleneck", num_labels=10)), image(64)),
    "mobilenet_v2": (lambda: MobileNetV2ForImageClassification(MobileNetV2Config(
        depth_multiplier=0.35, image_size=64, num_labels=10)), image(64)),
    "bert": (lambda: BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, num_labels=2)),
        tokens("input_ids", "attention_mask")),
    "gpt2": (lambda: GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2, use_cache=False,
        bos_token_id=0, eos_token_id=0)),
        tokens("input_ids")),
    "vit": (lambda: ViTForImageClassification(ViTConfig(
        image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, num_labels=10)), image(32)),
}

#: Full size (`--full`): the configs' defaults are ResNet-50 and BERT-base.
FULL_MODELS = {
    "resnet50": (lambda: ResNetForImageClassification(ResNetConfig()), image(224)),
    "bert_base": (lambda: BertForSequenceClassification(BertConfig()),
                  tokens("input_ids", "attention_mask", sequence=FULL_SEQUENCE,
                         vocab=BertConfig().vocab_size)),
    "gpt2_124m": (lambda: GPT2LMHeadModel(GPT2Config(use_cache=False)),
                  tokens("input_ids", sequence=FULL_SEQUENCE, vocab=GPT2Config().vocab_size)),
}


def example_inputs(spec: dict) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    values = []
    for entry in spec.values():
        if entry["dtype"] == "int64":
            low, high = entry["range"]
            values.append(torch.randint(low, high, entry["shape"], generator=generator))
        else:
            values.append(torch.randn(entry["shape"], generator=generator))
    return tuple(values)


def build_model(name: str, models: dict) -> torch.nn.Module:
    """Model `name` of `models` with the weights `export` gives it (seed 0), in eval mode."""
    torch.manual_seed(0)
    return models[name][0]().eval()


def export(name: str, out_dir: Path, models: dict) -> dict:
    spec = models[name][1]
    model = build_model(name, models)
    path = out_dir / f"{name}.onnx"
    with torch.no_grad():
        torch.onnx.export(model, example_inputs(spec), str(path), input_names=list(spec),
                          opset_version=OPSET, dynamo=True, external_data=False)
    return {"file": path.name, "class": type(model).__name__, "inputs": spec,
            "parameters": sum(p.numel() for p in model.parameters())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help=f"make the full-size models ({', '.join(FULL_MODELS)}) instead of the small ones")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: examples/models/, or build/models/ with --full)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to make (default: all of {', '.join(MODELS)}; "
                             f"with --full, of {', '.join(FULL_MODELS)})")
    args = parser.parse_args()
    models = FULL_MODELS if args.full else MODELS
    unknown = [n for n in args.names if n not in models]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; choose from {', '.join(models)}")
    args.names = args.names or list(models)
    if args.out is None:
        args.out = ROOT / "build" / "models" if args.full else Path(__file__).with_name("models")
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "models.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.setdefault("models", {})
    manifest["made_with"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                             "opset": OPSET, "exporter": "torch.onnx.export(dynamo=True)"}
    for name in args.names:
        manifest["models"][name] = export(name, args.out, models)
        print(f"{name}: {manifest['models'][name]['parameters']} parameters -> "
              f"{args.out / manifest['models'][name]['file']}")
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
