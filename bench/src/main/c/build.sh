#!/bin/sh
# Builds the native C reference (ferry_osu.c): build.sh OUTDIR [MPICC [NAME]]
#   OUTDIR  where the binary goes (bench/target/native from Maven and run.sh)
#   MPICC   MPI compiler wrapper (default: $MPICC, else mpicc); mpicc.mpich for an MPICH job
#   NAME    binary name (default ferry-osu)
# Without the compiler wrapper it prints why and exits 0: the Java suite runs without the reference.
out=${1:-target/native}
cc=${2:-${MPICC:-mpicc}}
name=${3:-ferry-osu}
src=$(cd "$(dirname "$0")" && pwd)/ferry_osu.c
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "[bench] $cc not found: native C reference not built (install an MPI with its compiler wrapper, e.g. libopenmpi-dev)"
    exit 0
fi
mkdir -p "$out" || exit 1
if [ -x "$out/$name" ] && [ "$out/$name" -nt "$src" ]; then
    echo "[bench] native C reference up to date: $out/$name"
    exit 0
fi
# no CUDA headers or libraries needed: the driver is loaded with dlopen at run time
if "$cc" -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -Wno-stringop-overflow -o "$out/$name" "$src" -ldl -lm; then
    echo "[bench] built native C reference: $out/$name ($cc)"
else
    echo "[bench] building the native C reference with $cc failed (see above)" >&2
    exit 1
fi
