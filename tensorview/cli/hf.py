"""``hf:`` targets: a transformers model from a config, no weights, no download.

``hf:<model_type>`` (``hf:llama``) is ``AutoConfig.for_model(model_type, **config)``;
``hf:<path>`` a local ``config.json`` (or a folder holding one), with ``--config``
overrides.  The model class is ``AutoModel`` (the base model) unless ``--task`` names
another (``causal-lm`` is ``AutoModelForCausalLM``), or, for a config file that lists
``architectures``, that class.  On ``meta`` the model is built under
``torch.device("meta")``: no memory, any size.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from typing import Any

import torch

from .targets import Request, Target
from .values import InputSpec, ModelError, UsageError

#: ``--task`` names and the transformers Auto classes they stand for
TASKS = {
    "base": "AutoModel",
    "causal-lm": "AutoModelForCausalLM",
    "masked-lm": "AutoModelForMaskedLM",
    "seq2seq-lm": "AutoModelForSeq2SeqLM",
    "sequence-classification": "AutoModelForSequenceClassification",
    "token-classification": "AutoModelForTokenClassification",
    "question-answering": "AutoModelForQuestionAnswering",
    "image-classification": "AutoModelForImageClassification",
}


def transformers_module() -> Any:
    try:
        import transformers
    except ImportError as e:
        raise UsageError(
            "hf: targets need the transformers package, which is not installed: pip install transformers"
        ) from e
    return transformers


def build_hf(rest: str, request: Request) -> Target:
    tf = transformers_module()
    config, name, architecture, source = _config(tf, rest, request.config)
    auto = _model_class(tf, request.task, architecture)
    device = torch.device(request.device) if request.device else torch.device("cpu")
    model = _instantiate(auto, config, device)
    sources = [source] if source else [f"transformers=={tf.__version__}"]
    return Target(model.eval(), name, default_inputs(model, config, request), sources)


def _config(tf: Any, rest: str, overrides: dict[str, Any]) -> tuple[Any, str, str | None, str | None]:
    """``(config, short name, architecture class name or None, config file or None)``."""
    path = os.path.join(rest, "config.json") if os.path.isdir(rest) else rest
    if path.endswith(".json") or os.path.isfile(path) or "/" in rest or os.sep in rest:
        if not os.path.isfile(path):
            raise UsageError(
                f"no config file {rest!r}: hf: takes a model type (hf:llama) or a local config.json; "
                "nothing is downloaded, so a hub id such as meta-llama/Llama-3-8B is not accepted "
                "(download its config.json and give the path)"
            )
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read {path}: {e}") from e
        if not isinstance(data, dict) or "model_type" not in data:
            raise UsageError(f"{path} is not a transformers config: it has no 'model_type'")
        model_type = data.pop("model_type")
        architectures = data.pop("architectures", None) or [None]
        _check_overrides(tf, model_type, overrides)
        config = _for_model(tf, model_type, {**data, **overrides})
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        return config, folder or model_type, architectures[0], os.path.abspath(path)
    _check_overrides(tf, rest, overrides)
    return _for_model(tf, rest, overrides), rest, None, None


def _for_model(tf: Any, model_type: str, settings: dict[str, Any]) -> Any:
    try:
        return tf.AutoConfig.for_model(model_type, **settings)
    except ValueError as e:
        if "Unrecognized model identifier" not in str(e):
            raise UsageError(f"bad --config for {model_type}: {e}") from e
        known = list(tf.models.auto.configuration_auto.CONFIG_MAPPING_NAMES)
        close = difflib.get_close_matches(model_type, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(known)} types, e.g. llama, bert, vit)"
        raise UsageError(f"unknown transformers model type {model_type!r}{hint}") from e
    except Exception as e:
        raise UsageError(f"bad --config for {model_type}: {type(e).__name__}: {e}") from e


def _check_overrides(tf: Any, model_type: str, overrides: dict[str, Any]) -> None:
    """A ``--config`` key close to a known setting is a misspelling (transformers keeps
    unknown keys silently, which would draw another model than the one meant)."""
    if not overrides:
        return
    default = _for_model(tf, model_type, {})
    known = set(default.to_dict()) | set(getattr(default, "attribute_map", {}))
    for key in overrides:
        if key in known or hasattr(default, key):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if close:
            raise UsageError(f"unknown {type(default).__name__} setting {key!r} in --config: did you mean {close[0]}?")
        print(f"tensorview: note: {key!r} is not a {type(default).__name__} setting; passed on as is", file=sys.stderr)


def _model_class(tf: Any, task: str | None, architecture: str | None) -> Any:
    if task is None:
        name = architecture if architecture and hasattr(tf, architecture) else "AutoModel"
    else:
        name = TASKS.get(task, task)
        if not (name.startswith("Auto") and hasattr(tf, name)):
            allowed = ", ".join(TASKS)
            raise UsageError(f"unknown --task {task!r}: use one of {allowed}, or a transformers Auto class name")
    return getattr(tf, name)


def _instantiate(auto: Any, config: Any, device: torch.device) -> Any:
    build: Any = getattr(auto, "from_config", None) or auto._from_config
    try:  # (mixture-of-experts models keep their default kernel on meta: recording/metafills.py)
        with torch.device(device):
            return build(config)
    except ValueError as e:
        if "Unrecognized configuration class" in str(e):
            raise UsageError(f"{auto.__name__} has no model for {type(config).__name__}: {str(e)[:200]}") from e
        raise ModelError(f"building {type(config).__name__} model failed: {e}") from e
    except Exception as e:
        raise ModelError(f"building the {type(config).__name__} model failed: {type(e).__name__}: {e}") from e


def default_inputs(model: Any, config: Any, request: Request) -> list[InputSpec]:
    """What the model's main input wants, by its ``main_input_name``; encoder-decoders also
    get ``decoder_input_ids``."""
    b, seq = request.batch_size, request.seq_len
    name = getattr(model, "main_input_name", "input_ids")
    sub = getattr(config, "vision_config", None) or config
    if name == "pixel_values":
        size = getattr(sub, "image_size", 224)
        h, w = (size, size) if isinstance(size, int) else tuple(size)[-2:]
        inputs = [InputSpec((b, getattr(sub, "num_channels", 3), h, w), torch.float32, name)]
    elif name == "input_features":  # speech encoders: mel bins x frames
        frames = 2 * getattr(config, "max_source_positions", 1500)
        inputs = [InputSpec((b, getattr(config, "num_mel_bins", 80), frames), torch.float32, name)]
    elif name == "input_values":  # raw audio: one second at 16 kHz
        inputs = [InputSpec((b, 16000), torch.float32, name)]
    else:
        inputs = [InputSpec((b, seq), torch.int64, name)]
    if getattr(config, "is_encoder_decoder", False):
        inputs.append(InputSpec((b, seq), torch.int64, "decoder_input_ids"))
    return inputs
