"""Importing changes no behaviour elsewhere: ``import trn_backend`` rebinds no attribute of a module loaded before it
(nor of a class such a module defines: opt_einsum's memo and constant folding included, which the backend adapts
on its first use), and after it, importing ``trn_backend.distributed`` rebinds nothing either, leaves the
process's warning filters as they were, and ``trn_backend.add`` stays the same object (the namespace's public
functions hand sharded arguments to the registered handler instead of being replaced). The third-party modules
the package builds on are imported first: their own import effects are not the package's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: the test process has imported the distributed package already.
CODE = r'''
import json, sys, warnings

# the third-party modules the package builds on, first: their own import effects (torch registers its types,
# sympy a warning filter) are not the package's
import array_api_compat.torch, ml_dtypes, numpy, opt_einsum, opt_einsum.contract, opt_einsum.sharing  # noqa: E401
import torch.distributed.device_mesh  # noqa: E401, F401
import torch.distributed.tensor  # noqa: F401
import torch.distributed.tensor.experimental  # noqa: F401
try:
    import autoray  # noqa: F401
except ImportError:
    pass

SKIPPED = ("__main__", "__mp_main__")  # this script (multiprocessing aliases it)


def snapshot():
    """{owner: {attribute: id(value)}} of every loaded module and of the classes each module defines."""
    seen = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.split(".")[0] in SKIPPED:
            continue
        try:
            attributes = dict(vars(module))
        except TypeError:
            continue
        seen[name] = {k: id(v) for k, v in attributes.items()}
        for k, v in attributes.items():
            if isinstance(v, type) and vars(v).get("__module__") == name:
                seen[f"{name}.{k}"] = {a: id(b) for a, b in dict(vars(v)).items()}
    return seen


def rebound(before, after):
    return sorted(f"{owner}.{k}" for owner, attributes in before.items() for k, i in attributes.items()
                  if after.get(owner, {}).get(k) != i)


before = snapshot()
filters = list(warnings.filters)
import trn_backend  # noqa: E402
after = snapshot()
package = {"changed": rebound(before, after), "filters_kept": list(warnings.filters) == filters}
filters = list(warnings.filters)
add = trn_backend.add
import trn_backend.distributed  # noqa: E402
print(json.dumps({"package": package, "changed": rebound(after, snapshot()),
                  "filters_kept": list(warnings.filters) == filters, "add_kept": trn_backend.add is add,
                  "registered": trn_backend.distributed.ShardedNeuronArray in trn_backend._overrides.OVERRIDES}))
'''


@pytest.mark.heavy
def test_importing_the_package_and_then_distributed_rebinds_nothing():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["package"] == {"changed": [], "filters_kept": True}
    assert report["changed"] == []
    assert report["filters_kept"]
    assert report["add_kept"]
    assert report["registered"]


SLICED = """
import json, sys
import numpy as np
import pytest
import trn_backend as xp
from trn_backend import _overrides
a = xp.asarray(np.arange(64.0).reshape(8, 8))
r = xp.contract("ij,jk,kl->il", a, a, a, memory_limit=64)
want = np.arange(64.0).reshape(8, 8)
print(json.dumps({"right": bool(np.array_equal(np.asarray(r), want @ want @ want)),
                  "distributed": "trn_backend.distributed" in sys.modules, "overrides": len(_overrides.OVERRIDES)}))
"""


@pytest.mark.heavy
def test_a_sliced_contraction_in_a_process_that_never_shards_registers_no_sharded_types():
    # Without sharded operands or a process group the slices run here: the sharded-array adapter is not imported,
    # so no public function starts looking for sharded types among its arguments.
    done = subprocess.run([sys.executable, "-c", SLICED], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"right": True, "distributed": False, "overrides": 0}
