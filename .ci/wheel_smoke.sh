#!/usr/bin/env bash
# Build the wheel and the sdist, check what they hold and that the build printed no warning, install the wheel
# into a fresh virtual environment outside the checkout (torch's CPU build first, as the Makefile does), and run
# .ci/wheel_smoke.py there. Usage: .ci/wheel_smoke.sh [python]   (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS

echo "[wheel] building the wheel and the sdist"
"$python" -m venv "$work/build-env"
"$work/build-env/bin/python" -m pip install -q build
if ! "$work/build-env/bin/python" -m build --outdir "$work/dist" . > "$work/build.log" 2>&1; then
  cat "$work/build.log"; exit 1
fi
# setuptools' own warnings (deprecations, packages it would leave out); notices about this machine's settings,
# such as byte-compiling being disabled by PYTHONDONTWRITEBYTECODE, are not about the package
if grep -inE "SetuptoolsDeprecationWarning|SetuptoolsWarning|BuildBackendWarning|deprecated|would be ignored" \
    "$work/build.log"; then
  echo "[wheel] the build printed the warnings above: fix them at their cause"; exit 1
fi
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)
"$python" -m zipfile -l "$wheel" > "$work/wheel.txt"
tar tzf "$sdist" > "$work/sdist.txt"
for want in trn_backend/data/mode_costs.json trn_backend/kernels/__init__.py trn_backend/kernels/nki/model/core.py \
            trn_backend/py.typed licenses/LICENSE; do
  grep -q "$want" "$work/wheel.txt" || { echo "[wheel] $want is missing from $wheel"; exit 1; }
done
for want in /kernels/__init__.py /LICENSE /README.md /CHANGELOG.md /trn_backend/data/mode_costs.json; do
  grep -q "^[^/]*$want\$" "$work/sdist.txt" || { echo "[wheel] $want is missing from $sdist"; exit 1; }
done

echo "[wheel] installing $(basename "$wheel") into a fresh environment outside the checkout"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q torch==2.13.0
"$work/venv/bin/python" -m pip install -q "$wheel"
cp "$root/.ci/wheel_smoke.py" "$work/smoke.py"
(cd "$work" && "$work/venv/bin/python" smoke.py)
echo "[wheel] done in $((SECONDS - start)) s"
