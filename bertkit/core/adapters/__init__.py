"""LoRA adapters (`train.adapter`) through Hugging Face's peft: which layers an adapter adapts in
each model family (`targets`), the base model an adapter bundle names and the hash that proves it
is the same one (`base`), training one (`training`), and loading one onto its base, merged or
sharing the base's weights with other adapters (`loading`). docs/adapters.md says how to use them."""

from __future__ import annotations

import contextlib
import warnings

from bertkit.core.errors import BertkitError
from bertkit.core.extras import install_command


def require_peft():
    """peft, or a clear error saying which install brings it."""
    try:
        import peft
    except ImportError:
        raise BertkitError(f"LoRA adapters need peft, which is not installed: {install_command('adapters')}") from None
    return peft


@contextlib.contextmanager
def quiet_peft():
    """peft 0.21 asks transformers 5 `is_gradient_checkpointing`, which warns that the name is
    deprecated on every adapter made or loaded: nothing a user can act on; and its warning of
    missing adapter tensors is bertkit's error instead."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        # bertkit names the missing tensors itself, as an error (loaded_checks.check_adapter_tensors)
        warnings.filterwarnings("ignore", message="Found missing adapter keys", category=UserWarning)
        yield
