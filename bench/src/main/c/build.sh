#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Builds the native C reference (ferry_osu.c): build.sh OUTDIR [MPICC [NAME]]
#   OUTDIR  where the binary goes (bench/target/native from Maven and run.sh)
#   MPICC   MPI compiler wrapper (default: $MPICC, else mpicc.openmpi or mpicc); mpicc.mpich for MPICH
#   NAME    binary name (default ferry-osu)
# Without the compiler wrapper it prints why and exits 0: the Java suite runs without the reference.
out=${1:-target/native}
cc=${2:-${MPICC:-}}
if [ -z "$cc" ]; then
    # Debian's plain mpicc follows the alternatives system; prefer Open MPI's own wrapper
    if command -v mpicc.openmpi >/dev/null 2>&1; then cc=mpicc.openmpi; else cc=mpicc; fi
fi
name=${3:-ferry-osu}
src=$(cd "$(dirname "$0")" && pwd)/ferry_osu.c
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "[bench] $cc not found: native C reference not built (install an MPI with its compiler wrapper, e.g. libopenmpi-dev)"
    exit 0
fi
mkdir -p "$out" || exit 1
# rebuilt when the source changed or another MPI's compiler is asked for (the binary must match the launcher)
ccpath=$(command -v "$cc")
if [ -x "$out/$name" ] && [ "$out/$name" -nt "$src" ] && [ "$(cat "$out/$name.cc" 2>/dev/null)" = "$ccpath" ]; then
    echo "[bench] native C reference up to date: $out/$name ($ccpath)"
    exit 0
fi
# no CUDA headers or libraries needed: the driver is loaded with dlopen at run time
if "$cc" -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -Wno-stringop-overflow -o "$out/$name" "$src" -ldl -lm; then
    echo "$ccpath" > "$out/$name.cc"
    echo "[bench] built native C reference: $out/$name ($ccpath)"
else
    echo "[bench] building the native C reference with $cc failed (see above)" >&2
    exit 1
fi
