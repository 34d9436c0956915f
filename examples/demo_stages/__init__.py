"""The stages of ``examples/demo.py``: one module each, importable by the tests.

- ``chemistry``: PySCF's RHF, density-fitting factors and reference DF-MP2 energy; the same energy on trn_backend
  under every precision mode and a couple of ``target_forward_error=`` targets, with its a priori error bound;
- ``accuracy``: that bound, from the per-step bounds the planner reports and the magnitudes of the data;
- ``network``: the amplitude of a random quantum circuit, a network of a few hundred tensors, contracted along a
  ``cotengra.HyperOptimizer`` tree sliced to a ``memory_limit``, on backends "trn", "torch" and "numpy";
- ``figure``: the PNG (accuracy against time per mode, network time per backend).
"""
