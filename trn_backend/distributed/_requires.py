"""The torch this package needs, checked first: DTensor's public namespace, ``torch.distributed.tensor``, came
with torch 2.5 (the project's pin admits 2.4, where only this package is unavailable)."""

import torch
import torch.distributed as dist

if not dist.is_available() or tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 5):
    raise ImportError(f"trn_backend.distributed needs torch.distributed and DTensor's public API (torch>=2.5); "
                      f"this is torch {torch.__version__}, torch.distributed available: {dist.is_available()}")
