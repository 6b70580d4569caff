#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Refreshes the checked-in PTX of ferry_patterns.cu (the application-pattern suite's kernels):
#   build-ptx.sh [NVCC]     compile with nvcc (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)
# Commit both files after a change to the .cu. Machines without nvcc use the checked-in PTX.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${1:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$nvcc" ] || { echo "build-ptx: no nvcc at $nvcc" >&2; exit 1; }
out="$here/../resources/dev/ferry/testing/ferry_patterns.ptx"
"$nvcc" -ptx -arch=compute_80 -O3 -o "$out" "$here/ferry_patterns.cu"
echo "build-ptx: wrote $out with $("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1)"
