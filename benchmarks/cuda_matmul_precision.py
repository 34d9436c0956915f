"""Every mode's float32 error on a CUDA GPU under each torch float32 matmul precision ("highest", "high" = TF32,
"medium"), against the bound trn_backend resolves for it on that device (native's widens under TF32/bf16 GEMMs).

Needs a CUDA device; results of the run on an H100 are in
benchmarks/results/cuda_matmul_precision_h100.txt. A measurement, not a test.

    python benchmarks/cuda_matmul_precision.py
"""

import torch

import trn_backend as xp
from trn_backend import _precision

torch.manual_seed(0)
M, K, N = 1024, 4096, 1024
a = torch.randn(M, K, device="cuda")
b = torch.randn(K, N, device="cuda")
exact = a.double() @ b.double()
scale = a.double().abs() @ b.double().abs()
bound = _precision.resolve(torch.float32, K, a.device).bound
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, native float32 bound at K={K}: {bound:.3e}")
for setting in ("highest", "high", "medium"):
    torch.set_float32_matmul_precision(setting)
    for name in ("native", "fast", "dd", "bf16x6", "ozaki", "fp64"):
        c = xp.matmul(xp.asarray(a), xp.asarray(b), precision=name)._t
        err = float(((c.double() - exact).abs() / scale).max())
        mb = _precision.resolve(torch.float32, K, a.device, precision=name).bound
        flag = "OK" if err <= mb else "EXCEEDS BOUND"
        print(f"float32_matmul_precision={setting:8s} {name:7s} max err {err:.3e} bound {mb:.3e} {flag}")
torch.set_float32_matmul_precision("highest")
