#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Puts the PTX of ferry_examples.cu where the build packages it, with a note of its origin.
#
#   build-ptx.sh OUT_DIR [NVCC]   (run by Maven at generate-resources)
#       With nvcc (NVCC argument, $NVCC, nvcc on PATH, or /usr/local/cuda/bin/nvcc), compiles the
#       .cu to OUT_DIR/ferry_examples.ptx and compares it with the checked-in copy (comments
#       aside): a difference is reported as a warning. Without nvcc (or NVCC=none), copies the
#       checked-in PTX. A failing nvcc fails the build.
#   build-ptx.sh --update
#       Compiles and replaces the checked-in copy (after a change to the .cu; commit both).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/ferry_examples.cu"
checked_in="$(cd "$here/../resources/dev/ferry/examples" && pwd)/ferry_examples.ptx"
flags=(-ptx -arch=compute_80 -fmad=false -O3)

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

if [[ "${1:-}" == --update ]]; then
    nvcc="$(find_nvcc "${2:-}")" || { echo "[ptx] --update needs nvcc" >&2; exit 1; }
    "$nvcc" "${flags[@]}" -o "$checked_in" "$src"
    echo "[ptx] updated $checked_in with $("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1)"
    exit 0
fi

out="${1:?usage: build-ptx.sh OUT_DIR [NVCC] | --update}"
mkdir -p "$out"
ptx="$out/ferry_examples.ptx"
if nvcc="$(find_nvcc "${2:-}")"; then
    version="$("$nvcc" --version | grep -o 'V[0-9][0-9.]*' | head -1 || true)"
    if ! "$nvcc" "${flags[@]}" -o "$ptx" "$src"; then
        echo "[ptx] $nvcc failed on $src; fix it, or build with -Dferry.nvcc=none to use the checked-in PTX" >&2
        exit 1
    fi
    echo "nvcc ${version#V} at build time (-arch=compute_80 -fmad=false)" > "$ptx.origin"
    if diff -q <(body "$ptx") <(body "$checked_in") >/dev/null; then
        echo "[ptx] compiled $src with nvcc ${version#V}: same as the checked-in copy"
    else
        echo "[ptx] WARNING: the PTX compiled by nvcc ${version#V} differs from the checked-in copy $checked_in;"
        echo "[ptx]          machines without nvcc use the checked-in one: refresh it with $here/build-ptx.sh --update"
    fi
else
    cp "$checked_in" "$ptx"
    echo "checked-in copy (no nvcc at build time)" > "$ptx.origin"
    echo "[ptx] no nvcc (none found, or none asked for): using the checked-in $checked_in"
fi
