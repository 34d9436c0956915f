"""What a user's type checker sees of the public API: mypy checks this file (pyproject.toml [tool.mypy] files),
and pytest never collects it (no test_ prefix). Nothing runs at import: the checks are the body of a function that
nobody calls.

``assert_type`` fails the check where an inferred type differs; each ``# type: ignore[...]`` marks a call the checker
must refuse, and warn_unused_ignores makes an accepted one an error. So the public functions keep their real
signatures through the namespace's override wrapper (``_overrides.public``) and the contraction entry points
(``contraction.front.entry_point``).
"""

from __future__ import annotations

from typing_extensions import assert_type  # typing's own is 3.11+; mypy checks as 3.10

import trn_backend as xp


def _checks() -> None:
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=xp.float32)
    b = xp.ones((2, 2), dtype=xp.float32)
    assert_type(a, xp.NeuronArray)
    assert_type(xp.asarray([1.0]), xp.NeuronArray)
    assert_type(xp.zeros((3,), dtype="float64", device="cpu"), xp.NeuronArray)

    # the array object: attributes and operators
    assert_type(a.shape, tuple[int, ...])
    assert_type(a.ndim, int)
    assert_type(a.T, xp.NeuronArray)
    assert_type(a @ b, xp.NeuronArray)
    assert_type(a + 1, xp.NeuronArray)
    assert_type(a < b, xp.NeuronArray)

    # element-wise functions (generated), reductions, manipulation
    assert_type(xp.add(a, b), xp.NeuronArray)
    assert_type(xp.add(a, 2.0), xp.NeuronArray)
    assert_type(xp.sqrt(a), xp.NeuronArray)
    assert_type(xp.sum(a, axis=0, keepdims=True), xp.NeuronArray)
    assert_type(xp.reshape(a, (4,)), xp.NeuronArray)
    assert_type(xp.astype(a, xp.float64), xp.NeuronArray)
    assert_type(xp.isdtype(a.dtype, "real floating"), bool)

    # contractions, with and without the precision keywords
    assert_type(xp.matmul(a, b), xp.NeuronArray)
    assert_type(xp.matmul(a, b, precision="dd"), xp.NeuronArray)
    assert_type(xp.linalg.matmul(a, b), xp.NeuronArray)
    assert_type(xp.tensordot(a, b, axes=1), xp.NeuronArray)
    assert_type(xp.vecdot(a, b, axis=-1), xp.NeuronArray)
    assert_type(xp.einsum("ij,jk->ik", a, b), xp.NeuronArray)
    assert_type(xp.einsum("ij,jk->ik", a, b, target_forward_error=1e-6), xp.NeuronArray)

    # the extensions
    assert_type(xp.linalg.det(a), xp.NeuronArray)
    assert_type(xp.linalg.svd(a).S, xp.NeuronArray)
    assert_type(xp.fft.fft(a, n=4, axis=0), xp.NeuronArray)
    assert_type(xp.fft.fftn(a, axes=(0, 1)), xp.NeuronArray)
    assert_type(xp.fft.fftshift(a), xp.NeuronArray)

    # wrong calls the checker refuses (an accepted one is an unused ignore: an error)
    xp.add(a)  # type: ignore[call-arg]
    xp.sum(a, axes=0)  # type: ignore[call-arg]
    xp.matmul(a)  # type: ignore[call-overload]
    xp.linalg.matmul(a, b, c=1)  # type: ignore[call-overload]
    xp.einsum(a, b)  # type: ignore[call-overload]
    xp.linalg.det(a, b)  # type: ignore[call-arg]
    xp.fft.fft(a, axes=(0,))  # type: ignore[call-arg]
    xp.reshape(a, "4")  # type: ignore[arg-type]
    xp.asarray([1.0], dtype=1.5)  # type: ignore[arg-type]
