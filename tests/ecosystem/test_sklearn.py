"""scikit-learn on NeuronArrays, each result compared with the same estimator or metric on NumPy arrays.

Two paths: with ``array_api_dispatch=True`` scikit-learn computes in trn_backend (results stay NeuronArrays),
which needs SciPy imported with ``SCIPY_ARRAY_API=1``; with dispatch off, scikit-learn's NumPy code converts our
arrays through ``np.asarray`` (results are ndarrays). SciPy reads the variable once, at its first import, so this
module sets it before importing scikit-learn; if SciPy was already imported without it (another test module
imported dask.array, say), only the dispatch-on tests skip, with that reason.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same_array


def _import_sklearn_with_scipy_array_api():
    """Import scikit-learn (and so SciPy) with SCIPY_ARRAY_API=1, restoring the variable afterwards: SciPy keeps
    what it read at import, and the dispatch tests set the variable again for scikit-learn's own check."""
    previous = os.environ.get("SCIPY_ARRAY_API")
    os.environ["SCIPY_ARRAY_API"] = "1"
    try:
        return importlib.import_module("sklearn")
    finally:
        if previous is None:
            del os.environ["SCIPY_ARRAY_API"]
        else:
            os.environ["SCIPY_ARRAY_API"] = previous


SCIPY_IMPORTED_FIRST = "scipy" in sys.modules
sklearn = _import_sklearn_with_scipy_array_api()

from scipy.special import logsumexp  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score  # noqa: E402
from sklearn.metrics.pairwise import euclidean_distances  # noqa: E402
from sklearn.preprocessing import LabelBinarizer, LabelEncoder, MinMaxScaler, StandardScaler  # noqa: E402


def _scipy_runs_on_trn_backend() -> bool:
    """Whether SciPy is in array-API mode: then its ported functions return NeuronArrays for NeuronArrays,
    otherwise they convert to NumPy."""
    return isinstance(logsumexp(xp.asarray(np.zeros(2, dtype=np.float64))), xp.NeuronArray)


RNG = np.random.default_rng(20240611)
FEATURES = RNG.normal(size=(60, 5))
# Two classes separated along a direction (with overlap), so LDA and logistic regression have real work to do.
LABELS = (FEATURES[:, 0] + 0.5 * FEATURES[:, 1] + 0.3 * RNG.normal(size=60) > 0).astype(np.int64)
TARGET = FEATURES @ np.array([1.0, -2.0, 0.5, 3.0, 0.0]) + 0.1 * RNG.normal(size=60) + 4.0

DTYPES = [np.float64, np.float32]
# float32 reductions in torch and NumPy sum in different orders; float64 agrees to near rounding.
RTOL = {np.float64: 1e-9, np.float32: 2e-4}
ATOL = {np.float64: 1e-10, np.float32: 2e-5}
# assert_same_array's keywords for a result of each dtype (the reference rounded to it)
COMPARE = {dtype: {"dtype": np.dtype(dtype).name, "rtol": RTOL[dtype], "atol": ATOL[dtype]} for dtype in DTYPES}


def on_trn(result, expected_dtype) -> np.ndarray:
    """A dispatch-on result: it must still be a NeuronArray (scikit-learn computed in our namespace) of the
    expected dtype; returned on the host for comparison."""
    assert isinstance(result, xp.NeuronArray), f"expected a NeuronArray, got {type(result).__name__}"
    host = np.asarray(result)
    assert host.dtype == np.dtype(expected_dtype), f"dtype {host.dtype}, expected {np.dtype(expected_dtype)}"
    return host


@pytest.fixture
def dispatch(monkeypatch):
    """scikit-learn's array API dispatch, on; it checks SCIPY_ARRAY_API when enabled."""
    if SCIPY_IMPORTED_FIRST and not _scipy_runs_on_trn_backend():
        pytest.skip(
            "SciPy was imported before this module without SCIPY_ARRAY_API=1, so scikit-learn's array "
            "API dispatch cannot run (set SCIPY_ARRAY_API=1 in the environment, or run this file alone)"
        )
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


@pytest.fixture
def no_dispatch():
    with sklearn.config_context(array_api_dispatch=False):
        yield


def data(dtype):
    """(features, labels, target) as NumPy arrays of the float dtype, and the same as NeuronArrays."""
    host = FEATURES.astype(dtype), LABELS, TARGET.astype(dtype)
    return host, tuple(xp.asarray(a) for a in host)


# --- dispatch on: scikit-learn computes in trn_backend ---


@pytest.mark.parametrize("dtype", DTYPES)
def test_lda_predict_and_proba(dispatch, dtype):
    (X, y, _), (Xt, yt, _) = data(dtype)
    ref = LinearDiscriminantAnalysis().fit(X, y)
    lda = LinearDiscriminantAnalysis().fit(Xt, yt)
    np.testing.assert_array_equal(on_trn(lda.predict(Xt), np.int64), ref.predict(X))
    assert_same_array(on_trn(lda.predict_proba(Xt), dtype), ref.predict_proba(X), **COMPARE[dtype])
    assert_same_array(on_trn(lda.coef_, dtype), ref.coef_, **COMPARE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_pca_full_svd(dispatch, dtype):
    (X, _, _), (Xt, _, _) = data(dtype)
    ref = PCA(n_components=3, svd_solver="full")
    expected = ref.fit_transform(X)
    pca = PCA(n_components=3, svd_solver="full")
    # scikit-learn flips signs deterministically (svd_flip), so components match NumPy's, not just up to sign.
    assert_same_array(on_trn(pca.fit_transform(Xt), dtype), expected, **COMPARE[dtype])
    assert_same_array(on_trn(pca.explained_variance_, dtype), ref.explained_variance_, **COMPARE[dtype])
    assert_same_array(on_trn(pca.components_, dtype), ref.components_, **COMPARE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_ridge_svd(dispatch, dtype):
    (X, _, t), (Xt, _, tt) = data(dtype)
    ref = Ridge(alpha=0.5, solver="svd").fit(X, t)
    ridge = Ridge(alpha=0.5, solver="svd").fit(Xt, tt)
    assert_same_array(on_trn(ridge.coef_, dtype), ref.coef_, **COMPARE[dtype])
    assert_same_array(on_trn(ridge.predict(Xt), dtype), ref.predict(X), **COMPARE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scaler", [StandardScaler, MinMaxScaler])
def test_scalers(dispatch, dtype, scaler):
    (X, _, _), (Xt, _, _) = data(dtype)
    ref = scaler().fit(X)
    fitted = scaler().fit(Xt)
    assert_same_array(on_trn(fitted.transform(Xt), dtype), ref.transform(X), **COMPARE[dtype])
    assert_same_array(on_trn(fitted.inverse_transform(fitted.transform(Xt)), dtype), X, **COMPARE[dtype])


def test_label_binarizer_and_encoder(dispatch):
    labels = np.array([3, 1, 3, 7, 1, 7, 7], dtype=np.int64)
    encoder = LabelEncoder().fit(xp.asarray(labels))
    np.testing.assert_array_equal(on_trn(encoder.classes_, np.int64), [1, 3, 7])
    np.testing.assert_array_equal(on_trn(encoder.transform(xp.asarray(labels)), np.int64), [1, 0, 1, 2, 0, 2, 2])
    expected = LabelBinarizer().fit_transform(labels)
    np.testing.assert_array_equal(on_trn(LabelBinarizer().fit_transform(xp.asarray(labels)), expected.dtype), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_metrics(dispatch, dtype):
    (_, y, t), (_, yt, tt) = data(dtype)
    predicted_labels = np.roll(y, 3)
    predicted_target = (t * 0.9 + 0.2).astype(dtype)
    assert accuracy_score(yt, xp.asarray(predicted_labels)) == pytest.approx(accuracy_score(y, predicted_labels))
    tolerance = RTOL[dtype]
    assert float(r2_score(tt, xp.asarray(predicted_target))) == pytest.approx(
        r2_score(t, predicted_target), rel=tolerance
    )
    assert float(mean_squared_error(tt, xp.asarray(predicted_target))) == pytest.approx(
        mean_squared_error(t, predicted_target), rel=tolerance
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_euclidean_distances(dispatch, dtype):
    (X, _, _), (Xt, _, _) = data(dtype)
    expected = euclidean_distances(X, X[:7])
    # The |x|^2 - 2xy + |y|^2 expansion cancels near zero distance: compare with an absolute floor there.
    assert_same_array(
        on_trn(euclidean_distances(Xt, Xt[:7, ...]), dtype),
        expected,
        dtype=np.dtype(dtype).name,
        rtol=RTOL[dtype],
        atol=1e-3 if dtype == np.float32 else 1e-6,
    )


# --- dispatch off: scikit-learn's NumPy code converts NeuronArrays with np.asarray ---


def host(result, expected_dtype) -> np.ndarray:
    assert isinstance(result, np.ndarray), f"expected an ndarray from the NumPy path, got {type(result).__name__}"
    assert result.dtype == np.dtype(expected_dtype), f"dtype {result.dtype}, expected {np.dtype(expected_dtype)}"
    return result


@pytest.mark.parametrize("dtype", DTYPES)
def test_logistic_regression_on_numpy_path(no_dispatch, dtype):
    (X, y, _), (Xt, yt, _) = data(dtype)
    ref = LogisticRegression().fit(X, y)
    model = LogisticRegression().fit(Xt, yt)
    np.testing.assert_array_equal(host(model.predict(Xt), np.int64), ref.predict(X))
    assert_same_array(host(model.coef_, dtype), ref.coef_, **COMPARE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_kmeans_on_numpy_path(no_dispatch, dtype):
    (X, _, _), (Xt, _, _) = data(dtype)
    ref = KMeans(n_clusters=3, n_init=2, random_state=0).fit(X)
    model = KMeans(n_clusters=3, n_init=2, random_state=0).fit(Xt)
    np.testing.assert_array_equal(host(model.labels_, np.int32), ref.labels_)
    assert_same_array(host(model.cluster_centers_, dtype), ref.cluster_centers_, **COMPARE[dtype])


@pytest.mark.parametrize("solver", ["cholesky", "svd"])
def test_ridge_on_numpy_path(no_dispatch, solver):
    (X, _, t), (Xt, _, tt) = data(np.float64)
    ref = Ridge(alpha=0.5, solver=solver).fit(X, t)
    model = Ridge(alpha=0.5, solver=solver).fit(Xt, tt)
    assert_same_array(host(model.coef_, np.float64), ref.coef_, **COMPARE[np.float64])
    assert_same_array(host(model.predict(Xt), np.float64), ref.predict(X), **COMPARE[np.float64])


def test_scaler_and_metrics_on_numpy_path(no_dispatch):
    (X, y, t), (Xt, yt, tt) = data(np.float32)
    assert_same_array(
        host(StandardScaler().fit_transform(Xt), np.float32), StandardScaler().fit_transform(X), **COMPARE[np.float32]
    )
    assert accuracy_score(yt, xp.asarray(np.roll(y, 2))) == accuracy_score(y, np.roll(y, 2))
    assert r2_score(tt, xp.asarray(t * 0.5)) == pytest.approx(r2_score(t, t * 0.5), rel=1e-6)
