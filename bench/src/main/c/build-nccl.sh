#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Builds the NCCL reference (nccl_ref.c): build-nccl.sh OUTDIR [NCCL_DIR] [MPICC]
#   OUTDIR    where the binary goes
#   NCCL_DIR  a folder with include/nccl.h and lib/libnccl.so.2 (default: the wheel that
#             scripts/install-nccl.sh unpacked, .ferry/wheels/nccl/nvidia/nccl)
#   MPICC     MPI compiler wrapper (default: $MPICC, else mpicc.openmpi or mpicc)
# No CUDA toolkit needed (cuda-stub/ stands in for cuda_runtime.h; the driver is opened with dlopen).
# At run time libnccl.so.2 must be found: LD_LIBRARY_PATH=NCCL_DIR/lib (rpath is set to NCCL_DIR/lib).
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-target/native}
nccl=${2:-$here/../../../../.ferry/wheels/nccl/nvidia/nccl}
cc=${3:-${MPICC:-}}
if [ -z "$cc" ]; then
    if command -v mpicc.openmpi >/dev/null 2>&1; then cc=mpicc.openmpi; else cc=mpicc; fi
fi
[ -f "$nccl/include/nccl.h" ] && [ -f "$nccl/lib/libnccl.so.2" ] || { echo "[bench] no NCCL at $nccl (include/nccl.h, lib/libnccl.so.2): run scripts/install-nccl.sh" >&2; exit 1; }
nccl=$(cd "$nccl" && pwd)
mkdir -p "$out"
"$cc" -O2 -std=c11 -Wall -Wextra -I"$here/cuda-stub" -I"$nccl/include" -o "$out/nccl_ref" "$here/nccl_ref.c" \
    "$nccl/lib/libnccl.so.2" -Wl,-rpath,"$nccl/lib" -ldl
echo "[bench] built $out/nccl_ref against NCCL in $nccl ($cc)"
