"""The oracle of tests/fast: a second copy of a code module, imported with S11_PLAIN=1, so its seam keeps the plain
functions (the module everyone else imports keeps its accelerators)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

CODE = Path(__file__).resolve().parent.parent / "code"


def plain_copy(name: str):
    """code/<name>.py imported again as <name>_plain_oracle with S11_PLAIN=1 set while it runs."""
    spec = importlib.util.spec_from_file_location(f"{name}_plain_oracle", CODE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.get("S11_PLAIN")
    os.environ["S11_PLAIN"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del os.environ["S11_PLAIN"]
        else:
            os.environ["S11_PLAIN"] = saved
    return module
