"""Where ``LIKE`` (the creation functions NeuronArray passes ``like=`` to) is still looked up by
``trn_backend/_array.py`` (``numpy_dispatch.functions.LIKE``) and tests/test_like.py: the set lives in
``creation``. This module goes once they read ``numpy_dispatch.creation.LIKE``."""

from .creation import LIKE

__all__ = ["LIKE"]
