#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/install-nccl.sh [--check]
#
# Installs NVIDIA's NCCL into the project's own folder (never system-wide), for backend-nccl and
# its tests: the Python wheel nvidia-nccl-cu13 (else nvidia-nccl-cu12) is fetched with
# `pip download --no-deps` (through whatever index pip is configured with) and unpacked into
#   $FERRY_HOME/.ferry/wheels/nccl/nvidia/nccl/lib/libnccl.so.2
#   $FERRY_HOME/.ferry/wheels/nccl/nvidia/nccl/include/nccl.h
# which is the layout of site-packages, so the same search finds it there and under any Python's
# site-packages. The downloaded .whl is deleted after unpacking (it is ~200 MB).
#
# Environment: FERRY_NCCL_WHEEL (package names to try, space separated; default
# "nvidia-nccl-cu13 nvidia-nccl-cu12"), FERRY_NCCL_WHEEL_FILE (a local .whl to unpack instead of
# downloading), FERRY_HOME (default: the repository), PIP (default: pip3, pip, python3 -m pip).
# Exit status 0 when the library and header are in place, 1 otherwise (with the reason), so that
# the build of backend-nccl fails rather than skipping its tests.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FERRY_HOME=${FERRY_HOME:-$REPO}
DEST=$FERRY_HOME/.ferry/wheels/nccl
LIB=$DEST/nvidia/nccl/lib/libnccl.so.2
HDR=$DEST/nvidia/nccl/include/nccl.h
say() { echo "ferry install-nccl: $*" >&2; }

if [ -f "$LIB" ] && [ -f "$HDR" ]; then
    say "NCCL $(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$HDR" | paste -sd.) at $LIB ($(cat "$DEST/WHEEL" 2>/dev/null || echo '?'))"
    exit 0
fi
if [ "${1:-}" = --check ]; then
    say "MISSING: NCCL is not installed in $DEST (run scripts/install-nccl.sh)"
    exit 1
fi

pip_cmd() {
    if [ -n "${PIP:-}" ]; then echo "$PIP"; return 0; fi
    local c
    for c in pip3 pip; do command -v "$c" >/dev/null 2>&1 && { echo "$c"; return 0; }; done
    command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 && { echo "python3 -m pip"; return 0; }
    return 1
}

unpack() {
    # unpack WHEEL: only nvidia/nccl/{lib,include} and the dist-info, into $DEST (atomically)
    local whl=$1 tmp
    tmp=$(mktemp -d "$FERRY_HOME/.ferry/wheels/.unpack.XXXXXX")
    if command -v unzip >/dev/null 2>&1; then
        unzip -q -o "$whl" 'nvidia/nccl/*' '*.dist-info/*' -d "$tmp"
    else
        python3 - "$whl" "$tmp" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("nvidia/nccl/") or ".dist-info/" in n])
PY
    fi
    [ -f "$tmp/nvidia/nccl/lib/libnccl.so.2" ] && [ -f "$tmp/nvidia/nccl/include/nccl.h" ] \
        || { rm -rf "$tmp"; say "$(basename "$whl") holds no nvidia/nccl/lib/libnccl.so.2 and include/nccl.h"; return 1; }
    basename "$whl" > "$tmp/WHEEL"
    rm -rf "$DEST"; mv "$tmp" "$DEST"
}

mkdir -p "$FERRY_HOME/.ferry/wheels"
if [ -n "${FERRY_NCCL_WHEEL_FILE:-}" ]; then
    unpack "$FERRY_NCCL_WHEEL_FILE" || exit 1
else
    PIPC=$(pip_cmd) || { say "MISSING: pip (pip3, pip or python3 -m pip) to fetch the NCCL wheel; or set FERRY_NCCL_WHEEL_FILE to a downloaded nvidia-nccl-cu13/cu12 .whl"; exit 1; }
    DL=$(mktemp -d "$FERRY_HOME/.ferry/wheels/.download.XXXXXX")
    trap 'rm -rf "$DL"' EXIT
    ok=0
    for pkg in ${FERRY_NCCL_WHEEL:-nvidia-nccl-cu13 nvidia-nccl-cu12}; do
        say "pip download --no-deps $pkg (only into $DL; nothing is installed into Python)"
        # --only-binary: a wheel for this platform, never a source build
        if $PIPC download --no-deps --only-binary=:all: --platform manylinux_2_18_x86_64 --python-version 3 --implementation py \
               "$pkg" -d "$DL" > "$DL/pip.log" 2>&1 \
           || $PIPC download --no-deps "$pkg" -d "$DL" > "$DL/pip.log" 2>&1; then
            whl=$(ls "$DL"/*.whl 2>/dev/null | head -1)
            if [ -n "$whl" ] && unpack "$whl"; then ok=1; break; fi
        else
            tail -3 "$DL/pip.log" | sed 's/^/    /' >&2
        fi
    done
    [ $ok = 1 ] || { say "MISSING: could not fetch an NCCL wheel (${FERRY_NCCL_WHEEL:-nvidia-nccl-cu13 nvidia-nccl-cu12}) with $PIPC; set FERRY_NCCL_WHEEL_FILE to a .whl, or configure pip's index"; exit 1; }
fi
say "installed NCCL $(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$HDR" | paste -sd.) from $(cat "$DEST/WHEEL") into $DEST"
