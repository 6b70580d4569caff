#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Puts the PTX of ferry_reduce.cu (the reduction kernels of DeviceReduction) where the build
# packages it: one module per data type, ferry_reduce_<type>.ptx (-DFERRY_ONLY_<type>), so that a
# process JIT-compiles only the types it reduces.
#
#   build-ptx.sh OUT_DIR [NVCC]   (run by Maven at generate-resources)
#       With nvcc (NVCC argument, $NVCC, nvcc on PATH, or /usr/local/cuda/bin/nvcc), compiles the
#       .cu to OUT_DIR and compares each module with the checked-in copy (comments aside): a
#       difference is reported as a warning. Without nvcc (or NVCC=none), copies the checked-in
#       PTX. A failing nvcc fails the build.
#   build-ptx.sh --update [NVCC]
#       Compiles and replaces the checked-in copies (after a change to the .cu; commit them all).
#
# Flags: compute_80 PTX (the driver JIT-compiles it for the GPU it runs on: A100 and later);
# -fmad=false, -ftz=false, -prec-*: every float step one IEEE operation rounded to nearest even,
# as the host reductions compute them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/ferry_reduce.cu"
checked_in="$(cd "$here/../resources/dev/ferry/cuda" && pwd)"
flags=(-ptx -arch=compute_80 -O3 -fmad=false -ftz=false -prec-div=true -prec-sqrt=true)
types=(byte short int long float double float16 bfloat16 short_int int_int long_int float_int double_int)

# prints the nvcc to use; returns 1 when there is none (or "none" was asked for)
find_nvcc() {
    local given="${1:-auto}"
    if [[ "$given" == auto ]]; then given="${NVCC:-auto}"; fi
    case "$given" in
        none) return 1 ;;
        auto)
            if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return 0; fi
            if [[ -x /usr/local/cuda/bin/nvcc ]]; then echo /usr/local/cuda/bin/nvcc; return 0; fi
            return 1 ;;
        *)
            if [[ ! -x "$given" ]]; then
                echo "[ptx] nvcc '$given' is not executable (use a path, auto, or none)" >&2
                echo /bin/false; return 0   # fails the compile below, loudly
            fi
            echo "$given" ;;
    esac
}

body() { grep -v '^\s*//' "$1" | sed -e 's/[[:space:]]*$//' | grep -v '^$'; }

compile_all() { # NVCC DIR
    local t
    for t in "${types[@]}"; do
        if ! "$1" "${flags[@]}" "-DFERRY_ONLY_$t" -o "$2/ferry_reduce_$t.ptx" "$src"; then
            echo "[ptx] $1 failed on $src ($t); fix it, or build with -Dferry.nvcc=none to use the checked-in PTX" >&2
            exit 1
        fi
    done
}

if [[ "${1:-}" == --update ]]; then
    nvcc="$(find_nvcc "${2:-}")" || { echo "[ptx] --update needs nvcc" >&2; exit 1; }
    rm -f "$checked_in"/ferry_reduce_*.ptx
    compile_all "$nvcc" "$checked_in"
    echo "[ptx] updated ${#types[@]} modules in $checked_in with $("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1)"
    exit 0
fi

out="${1:?usage: build-ptx.sh OUT_DIR [NVCC] | --update [NVCC]}"
mkdir -p "$out"
# an earlier build's modules, newer than the source, this script and the checked-in copies: nothing to do
fresh=1
for t in "${types[@]}"; do
    f="$out/ferry_reduce_$t.ptx"
    if [[ ! -f "$f" || "$src" -nt "$f" || "${BASH_SOURCE[0]}" -nt "$f" || "$checked_in/ferry_reduce_$t.ptx" -nt "$f" ]]; then fresh=0; break; fi
done
if [[ $fresh == 1 && -f "$out/ferry_reduce.ptx.origin" ]]; then
    echo "[ptx] $out is up to date ($(cat "$out/ferry_reduce.ptx.origin"))"
    exit 0
fi
if nvcc="$(find_nvcc "${2:-}")"; then
    version="$("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1 || true)"
    compile_all "$nvcc" "$out"
    echo "nvcc ${version#V} at build time (${flags[*]})" > "$out/ferry_reduce.ptx.origin"
    differ=()
    for t in "${types[@]}"; do
        diff -q <(body "$out/ferry_reduce_$t.ptx") <(body "$checked_in/ferry_reduce_$t.ptx") >/dev/null 2>&1 || differ+=("$t")
    done
    if [[ ${#differ[@]} -eq 0 ]]; then
        echo "[ptx] compiled $src with nvcc ${version#V}: same as the checked-in copies"
    else
        echo "[ptx] WARNING: the PTX compiled by nvcc ${version#V} differs from the checked-in copy for: ${differ[*]};"
        echo "[ptx]          machines without nvcc use the checked-in ones: refresh them with $here/build-ptx.sh --update"
    fi
else
    cp "$checked_in"/ferry_reduce_*.ptx "$out/"
    echo "checked-in copy (no nvcc at build time)" > "$out/ferry_reduce.ptx.origin"
    echo "[ptx] no nvcc (none found, or none asked for): using the checked-in PTX of $checked_in"
fi
