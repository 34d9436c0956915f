"""Smoke test of an installed trn-backend wheel, run from outside the checkout (so the checkout's sources cannot
be what is imported): the package, its data and kernels ship, a contraction runs under a precision mode, and the
command-line tools start."""

import importlib.metadata
import pathlib
import subprocess
import sys

import numpy as np
import opt_einsum

import trn_backend as xp

package = pathlib.Path(xp.__file__).resolve().parent
assert "site-packages" in package.parts, f"imported from {package}, not from the installed wheel"
assert xp.__version__ == importlib.metadata.version("trn-backend"), xp.__version__
assert (package / "data" / "mode_costs.json").is_file(), "the mode cost table did not ship"
assert (package / "kernels" / "nki" / "model").is_dir(), "the kernels folder did not ship"
assert (package / "py.typed").is_file()

rng = np.random.default_rng(0)
a, b = rng.standard_normal((64, 64), dtype=np.float32), rng.standard_normal((64, 64), dtype=np.float32)
with xp.precision("dd"):
    c = opt_einsum.contract("ij,jk->ik", a, b, backend="trn")
exact = a.astype(np.float64) @ b.astype(np.float64)
bound = xp.error_bound("dd", xp.float32, 64) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
assert np.all(np.abs(np.asarray(c, dtype=np.float64) - exact) <= bound), "dd missed its bound"


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "trn_backend", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"python -m trn_backend {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


assert "torch.matmul" in cli("explain", "ij,jk->ik", "64x64", "64x64")
assert "check-neuron: ok" in cli("check-neuron")
print(f"wheel smoke test: trn-backend {xp.__version__} from {package}: ok")
