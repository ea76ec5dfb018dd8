"""The ``tensorview`` command (also ``python -m tensorview``): draw a model from a file,
a module, a transformers config, timm or torchvision, from the shell.  See docs/cli.md.

    tensorview draw hf:llama --config num_hidden_layers=4 -o llama.svg
    tensorview draw models.py:build_model --kwargs width=64 --input-size 1,3,32,32 -o net.png
"""

from .main import main

__all__ = ["main"]
