"""The linalg extension of the array API standard (2025.12).

Decompositions, solvers and norms run on torch.linalg; products (matmul, tensordot, vecdot, and outer and
matrix_power built on matmul) go through the contraction planner and the kernel layer. Integer input of the
floating-point functions promotes to the default floating dtype, as in NumPy; bool input is a TypeError.
Where NumPy raises numpy.linalg.LinAlgError (a ValueError) these functions raise it too: singular or
non-positive-definite input, and decompositions that do not converge (non-finite input of svd, eigh, ...).
"""

from __future__ import annotations

from ._api import linalg as _impl
from ._api import linear_algebra as _products
from ._overrides import public

__all__ = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

# The namespace's own products, one public function under both names (``trn_backend.matmul is
# trn_backend.linalg.matmul``), named as the namespace's: trn_backend._namespace imports them from here.
matmul = public(_products.matmul, "matmul")
matrix_transpose = public(_products.matrix_transpose, "matrix_transpose")
tensordot = public(_products.tensordot, "tensordot")
vecdot = public(_products.vecdot, "vecdot")

cholesky = public(_impl.cholesky, "linalg.cholesky")
cross = public(_impl.cross, "linalg.cross")
det = public(_impl.det, "linalg.det")
diagonal = public(_impl.diagonal, "linalg.diagonal")
eig = public(_impl.eig, "linalg.eig")
eigh = public(_impl.eigh, "linalg.eigh")
eigvals = public(_impl.eigvals, "linalg.eigvals")
eigvalsh = public(_impl.eigvalsh, "linalg.eigvalsh")
inv = public(_impl.inv, "linalg.inv")
matrix_norm = public(_impl.matrix_norm, "linalg.matrix_norm")
matrix_power = public(_impl.matrix_power, "linalg.matrix_power")
matrix_rank = public(_impl.matrix_rank, "linalg.matrix_rank")
outer = public(_impl.outer, "linalg.outer")
pinv = public(_impl.pinv, "linalg.pinv")
qr = public(_impl.qr, "linalg.qr")
slogdet = public(_impl.slogdet, "linalg.slogdet")
solve = public(_impl.solve, "linalg.solve")
svd = public(_impl.svd, "linalg.svd")
svdvals = public(_impl.svdvals, "linalg.svdvals")
trace = public(_impl.trace, "linalg.trace")
vector_norm = public(_impl.vector_norm, "linalg.vector_norm")
