"""Importing an adapter registers it and changes nothing else: after ``import trn_backend``, importing
``trn_backend.distributed`` rebinds no attribute of a module loaded before it (nor of a class such a module
defines), leaves the process's warning filters as they were, and ``trn_backend.add`` stays the same object (the
namespace's public functions hand sharded arguments to the registered handler instead of being replaced). The
third-party modules it builds on are imported first: their own import effects are not the package's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: the test process has imported the distributed package already.
CODE = r'''
import json, sys, warnings

import trn_backend

# the third-party modules the package builds on, first: their own import effects (torch registers its types,
# sympy a warning filter) are not the package's
import torch.distributed.device_mesh  # noqa: E401, F401
import torch.distributed.tensor  # noqa: F401
import torch.distributed.tensor.experimental  # noqa: F401

# opt_einsum's private dispatch tables are written by the contraction backend (handled separately)
SKIPPED = ("opt_einsum",)


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


before = snapshot()
filters = list(warnings.filters)
add = trn_backend.add
import trn_backend.distributed  # noqa: E402
after = snapshot()
changed = sorted(f"{owner}.{k}" for owner, attributes in before.items() for k, i in attributes.items()
                 if after.get(owner, {}).get(k) != i)
print(json.dumps({"changed": changed, "filters_kept": list(warnings.filters) == filters,
                  "add_kept": trn_backend.add is add, "registered": trn_backend.distributed.ShardedNeuronArray
                  in trn_backend._overrides.OVERRIDES}))
'''


def test_importing_distributed_rebinds_nothing():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["changed"] == []
    assert report["filters_kept"]
    assert report["add_kept"]
    assert report["registered"]
