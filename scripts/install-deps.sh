#!/usr/bin/env bash
# Installs the Debian packages Kiln builds against, only those that are missing, so running it
# twice is cheap. Needs root (as the README's commands are run).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache
  llvm-19-dev libopenblas-dev libfmt-dev
  libgtest-dev googletest libbenchmark-dev nlohmann-json3-dev
  graphviz  # renders the debug folder's .dot files to .svg (tested by cli.demo_short)
  python3-dev python3-venv  # the Python package (scripts/python-env.sh makes its environment)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "kiln: installing missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "kiln: all build dependencies are installed"
fi
