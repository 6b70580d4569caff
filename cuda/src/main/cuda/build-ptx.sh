#!/usr/bin/env bash
# Refreshes the checked-in PTX of ferry_reduce.cu (the reduction kernels of DeviceReduction), one
# module per data type (ferry_reduce_<type>.ptx), so that a process JIT-compiles only what it uses:
#   build-ptx.sh [NVCC]     compile with nvcc (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)
# Commit the .cu and the .ptx files together. Machines without nvcc use the checked-in PTX; the
# driver JIT-compiles it for the GPU it runs on (compute_80: A100 and later).
# -fmad=false, -ftz=false, -prec-*: every float step is one IEEE operation rounded to nearest
# even, as the host reductions compute them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${1:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$nvcc" ] || { echo "build-ptx: no nvcc at $nvcc" >&2; exit 1; }
outdir="$here/../resources/dev/ferry/cuda"
mkdir -p "$outdir"
rm -f "$outdir"/ferry_reduce*.ptx
total=0
for t in byte short int long float double float16 bfloat16 short_int int_int long_int float_int double_int; do
    out="$outdir/ferry_reduce_$t.ptx"
    "$nvcc" -ptx -arch=compute_80 -O3 -fmad=false -ftz=false -prec-div=true -prec-sqrt=true -DFERRY_ONLY_$t -o "$out" "$here/ferry_reduce.cu"
    total=$((total + $(grep -c '^.visible .entry' "$out")))
done
echo "build-ptx: wrote $total kernels in $outdir/ferry_reduce_*.ptx with $("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1)"
