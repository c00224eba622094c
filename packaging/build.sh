#!/bin/sh
# Build the frozen desktop app into dist/neuronbench/ (run from anywhere; needs `pip install -e '.[package]'`).
#   sh packaging/build.sh [DISTDIR]
# Then: dist/neuronbench/neuronbench --version, or install packaging/neuronbench.desktop and the icons.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
dist="${1:-$repo/dist}"
python="${PYTHON:-$repo/.venv/bin/python}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$dist" --workpath "$work" "$here/neuronbench.spec"
# Desktop integration files sit next to the binary for an installer (or a user) to copy.
cp "$here/neuronbench.desktop" "$dist/neuronbench/"
cp "$repo/resources/icons/neuronbench.svg" "$dist/neuronbench/"
echo "built $dist/neuronbench/neuronbench ($(du -sh "$dist/neuronbench" | cut -f1))"
