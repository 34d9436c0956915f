"""Checked first: torch builds without torch.distributed (some platforms ship them) cannot shard arrays."""

import torch.distributed as dist

if not dist.is_available():
    raise ImportError("trn_backend.distributed needs torch.distributed, which this torch build lacks")
