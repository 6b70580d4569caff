#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/build-cuda-mpich.sh [OUTDIR]      (default OUTDIR: <repo>/.ferry/kits)
#
# Builds a CUDA-aware MPICH from a Debian source package and packs it as
# OUTDIR/mpich-<upstream version>-cuda-x86_64.tgz, whose members are opt/mpich-cuda/...
# (install on the GPU machine with `tar xzf mpich-...tgz -C /`, then
# PATH=/opt/mpich-cuda/bin:$PATH LD_LIBRARY_PATH=/opt/mpich-cuda/lib).
#
# Source: Debian's `mpich` source package. Wanted is trixie's 4.3.0+really4.2.1-1
# (MPICH 4.2.1); the Debian mirror reachable from the build machine answered 404 for all
# of its files (Nov 2026), so the script falls back to bookworm's 4.0.2-3 (MPICH 4.0.2),
# which has the same CUDA design (yaksa GPU datatype engine + ch4 shm "gpudirect" CUDA IPC).
# Override with MPICH_DEB_VERSIONS="4.3.0+really4.2.1-1" (space-separated, first that
# downloads wins). Debian's patches are only autotools fixes for Debian's autoreconf build;
# patches that touch autotools inputs are skipped (no autoreconf here), others are applied.
#
# Configure line (4.0.2; PREFIX=/opt/mpich-cuda, STUB=.ferry/build/cuda-stub):
#   LIBRARY_PATH=$STUB ./configure --prefix=/opt/mpich-cuda \
#     --with-device=ch4:ofi:sockets --with-libfabric=embedded \
#     --with-ch4-shmmods=posix,gpudirect \
#     --with-cuda=/usr/local/cuda --with-cuda-sm=90 \
#     --with-hwloc=embedded --with-pm=hydra \
#     --disable-fortran --disable-cxx --disable-romio \
#     --disable-static --enable-shared --disable-dependency-tracking
# Why each option:
#   --prefix=/opt/mpich-cuda        fixed install place on the GPU machine (wrappers embed it).
#   --with-device=ch4:ofi:sockets   ch4 is the device with GPU support; the OFI netmod with only
#                                   libfabric's self-contained "sockets" provider is the smallest
#                                   netmod build that needs no RDMA/UCX libraries (inter-node is
#                                   not needed: both GPUs are on one host).
#   --with-libfabric=embedded       no libfabric on the GPU machine; the embedded one is linked in.
#   --with-ch4-shmmods=posix,gpudirect  intra-node shared memory plus the CUDA IPC path
#                                   (cudaIpcGetMemHandle/OpenMemHandle) for device buffers.
#   --with-cuda=/usr/local/cuda     CUDA support (MPL GPU layer, yaksa CUDA backend, IPC);
#                                   libcudart.so.13 is linked dynamically and copied into lib/.
#   --with-cuda-sm=90               yaksa compiles its ~320 .cu pack kernels for Hopper only
#                                   (the default "all" does not know CUDA 13 and would ask nvcc
#                                   for architectures CUDA 13 dropped).
#   --with-hwloc=embedded           no dependency on the target's libhwloc.
#   --with-pm=hydra  mpiexec (hydra) and its PMI, as in every MPICH build.
#   --disable-fortran --disable-cxx  no Fortran/C++ bindings: Ferry uses C/Java only; shorter.
#   --disable-romio                 no MPI-IO (not used by Ferry); saves a large part of the build.
#   --disable-static --disable-dependency-tracking  shorter build, smaller install.
#   LIBRARY_PATH=$STUB              the stub libcuda.so (scripts/make-cuda-stub.sh) satisfies
#                                   -lcuda at link time only; LIBRARY_PATH leaves no -L/RPATH
#                                   trace in libraries, .la files or the mpicc wrapper.
# CUDA 13 compatibility: yaksa's init hook reads cudaDeviceProp::computeMode, which CUDA 13
# removed; the script rewrites it to cudaDeviceGetAttribute(cudaDevAttrComputeMode) (same
# meaning). The datatype engine is yaksa (the only one with GPU support); MPICH 4.0.2 has no
# configure option for yaksa's nesting depth (its kernels are pre-generated).
#
# Environment: CUDA_HOME (/usr/local/cuda), JOBS (nproc), WORKDIR (<repo>/.ferry/build),
# SRCDIR (<repo>/.ferry/src), MPICH_DEB_VERSIONS (see above).
# Idempotent: the download, unpack, configure and make steps are skipped/resumed when done.
set -euo pipefail

usage() { echo "usage: $0 [OUTDIR]   (default OUTDIR: <repo>/.ferry/kits)" >&2; }
case "${1:-}" in -h|--help) usage; exit 0;; esac
[ $# -le 1 ] || { usage; exit 2; }

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-$REPO/.ferry/kits}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=${JOBS:-$(nproc)}
WORKDIR=${WORKDIR:-$REPO/.ferry/build}
SRCDIR=${SRCDIR:-$REPO/.ferry/src}
MPICH_DEB_VERSIONS=${MPICH_DEB_VERSIONS:-"4.3.0+really4.2.1-1 4.0.2-3"}
PREFIX=/opt/mpich-cuda
TRIXIE_SRC=/etc/apt/sources.list.d/ferry-trixie-src.sources

mkdir -p "$OUTDIR/logs" "$WORKDIR" "$SRCDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGDIR=$OUTDIR/logs
STUB=$WORKDIR/cuda-stub

say() { echo "[$(date +%H:%M:%S)] build-cuda-mpich: $*"; }
die() {
    echo "[$(date +%H:%M:%S)] build-cuda-mpich: ERROR: $1" >&2
    [ $# -gt 1 ] && echo "build-cuda-mpich: what to do: $2" >&2
    exit 1
}
# run_logged NAME CMD...: runs CMD with output in $LOGDIR/mpich-NAME.log; on failure shows its tail.
is_elf() { [ "$(head -c4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
run_logged() {
    local name=$1; shift
    local log=$LOGDIR/mpich-$name.log
    say "$name (log: $log)"
    if ! "$@" > "$log" 2>&1; then
        echo "---- last 40 lines of $log ----" >&2; tail -n 40 "$log" >&2
        return 1
    fi
}

[ "$(uname -m)" = x86_64 ] || die "this script builds x86_64 kits only" "run it on an x86_64 machine"
[ -x "$CUDA_HOME/bin/nvcc" ] || die "nvcc not found in $CUDA_HOME/bin" "install the CUDA toolkit or set CUDA_HOME"
[ -e "$CUDA_HOME/lib64/libcudart.so.13" ] || die "$CUDA_HOME/lib64/libcudart.so.13 not found" "install the CUDA 13 toolkit (cudart) or set CUDA_HOME"
for t in gcc make perl python3 dpkg-source apt-get readelf strip tar patch; do
    command -v $t >/dev/null || die "$t not found" "apt-get install gcc make perl python3 dpkg-dev binutils tar patch"
done

T0=$(date +%s)

# 1. apt source entry for trixie (bookworm's deb-src is expected to exist already).
if [ ! -e "$TRIXIE_SRC" ]; then
    say "adding $TRIXIE_SRC"
    cat > "$TRIXIE_SRC" <<'EOF' || die "cannot write $TRIXIE_SRC" "run as root"
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update > "$LOGDIR/mpich-apt-update.log" 2>&1 || die "apt-get update failed (see $LOGDIR/mpich-apt-update.log)" "check the network/mirror"
fi

# 2. Download the source package (first version in MPICH_DEB_VERSIONS that downloads).
DEBVER=""
for v in $MPICH_DEB_VERSIONS; do
    up=${v%-*}; up=${up#*+really}          # 4.3.0+really4.2.1-1 -> 4.2.1
    if ls "$SRCDIR"/mpich_"${v}".dsc >/dev/null 2>&1 && ls "$SRCDIR"/mpich_"${v%-*}".orig.tar.* >/dev/null 2>&1; then
        DEBVER=$v; say "source mpich=$v already in $SRCDIR"; break
    fi
    if ! grep -qx "Version: $v" <<< "$(apt-cache showsrc mpich 2>/dev/null)"; then
        apt-get update > "$LOGDIR/mpich-apt-update.log" 2>&1 || true
    fi
    say "downloading Debian source mpich=$v"
    if (cd "$SRCDIR" && apt-get source --download-only "mpich=$v") > "$LOGDIR/mpich-download-$v.log" 2>&1; then
        DEBVER=$v; break
    fi
    say "mpich=$v could not be downloaded: $(grep -m1 -E '^E:' "$LOGDIR/mpich-download-$v.log" || true)"
    rm -f "$SRCDIR"/mpich_"${v}".dsc
done
[ -n "$DEBVER" ] || die "none of mpich=$MPICH_DEB_VERSIONS could be downloaded (logs: $LOGDIR/mpich-download-*.log)" \
    "check 'apt-cache showsrc mpich' and the deb-src entries in /etc/apt/sources.list.d/, or set MPICH_DEB_VERSIONS"
UPVER=${DEBVER%-*}; UPVER=${UPVER#*+really}
ORIGVER=${DEBVER%-*}
say "using Debian mpich $DEBVER = MPICH $UPVER"

# 3. Unpack (without Debian patches), then apply the patches that touch no autotools input.
SRC=$WORKDIR/mpich-$UPVER-src
if [ ! -f "$SRC/.unpacked" ]; then
    rm -rf "$SRC" "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    (cd "$SRC.tmp" && dpkg-source --no-check -x --skip-patches "$SRCDIR/mpich_$DEBVER.dsc" src) > "$LOGDIR/mpich-unpack.log" 2>&1 \
        || die "dpkg-source -x failed (see $LOGDIR/mpich-unpack.log)" "delete $SRCDIR/mpich_* and run again to re-download"
    mv "$SRC.tmp/src" "$SRC"; rm -rf "$SRC.tmp"
    if [ -f "$SRC/debian/patches/series" ]; then
        while read -r p _; do
            case "$p" in ''|\#*) continue;; esac
            files=$(grep -E '^\+\+\+ ' "$SRC/debian/patches/$p" | awk '{print $2}')
            if grep -qE '(configure\.ac|\.am|\.m4|autogen\.sh|Makefile\.in|configure)$' <<< "$files"; then
                say "skipping Debian patch $p (touches autotools inputs: $(echo $files))"
                continue
            fi
            say "applying Debian patch $p"
            (cd "$SRC" && patch -p1 --forward < "debian/patches/$p") >> "$LOGDIR/mpich-unpack.log" 2>&1 \
                || die "Debian patch $p does not apply (see $LOGDIR/mpich-unpack.log)" "remove $SRC and run again, or drop the patch"
        done < "$SRC/debian/patches/series"
    fi
    touch "$SRC/.unpacked"
fi

# 3b. CUDA 13 removed cudaDeviceProp::computeMode: ask cudaDeviceGetAttribute instead.
HOOK=$SRC/modules/yaksa/src/backend/cuda/hooks/yaksuri_cuda_init_hooks.c
if [ -f "$HOOK" ] && grep -q 'prop.computeMode' "$HOOK"; then
    say "patching yaksa for CUDA 13 (cudaDeviceProp::computeMode removed)"
    perl -0pi -e 's/struct cudaDeviceProp prop;\s*cerr = cudaGetDeviceProperties\(&prop, i\);/int prop_computeMode = cudaComputeModeDefault;\n            cerr = cudaDeviceGetAttribute(&prop_computeMode, cudaDevAttrComputeMode, i);/; s/prop\.computeMode/prop_computeMode/g' "$HOOK"
    grep -q 'cudaDevAttrComputeMode' "$HOOK" || die "the CUDA 13 patch of $HOOK did not apply" "edit the perl expression in $0 to match the file"
fi

# 3c. Build time: yaksa's cudalt.sh runs nvcc twice per kernel file (PIC and non-PIC objects);
#     with --disable-static only the PIC object is linked, so copy it instead of compiling
#     again (halves the nvcc time). Also silence its 'libtool: not found' (comment line only).
CUDALT=$SRC/modules/yaksa/src/backend/cuda/cudalt.sh
if [ -f "$CUDALT" ] && ! grep -q 'ferry: non-PIC copy' "$CUDALT"; then
    say "patching yaksa cudalt.sh (one nvcc run per kernel)"
    perl -0pi -e 's/CMD="\$\{@\} -o \$NPIC_FILEPATH"\nif test "\$verbose" ; then echo "\$CMD" ; fi\neval "\$CMD"/cp "\$PIC_FILEPATH" "\$NPIC_FILEPATH" # ferry: non-PIC copy/; s/\$\(libtool --version \| head -n 1\)/\$( (libtool --version 2>\/dev\/null || echo libtool) | head -n 1)/' "$CUDALT"
    grep -q 'ferry: non-PIC copy' "$CUDALT" || die "the cudalt.sh patch did not apply" "edit the perl expression in $0 (or drop this step: it only saves time)"
fi

# 4. Stub libcuda for link time only.
"$REPO/scripts/make-cuda-stub.sh" "$STUB" > "$LOGDIR/mpich-stub.log" 2>&1 \
    || die "building the stub libcuda failed (see $LOGDIR/mpich-stub.log)" "run scripts/make-cuda-stub.sh $STUB by hand"

# 5. Configure (out of tree), skipped when the same line was already configured.
BUILD=$WORKDIR/mpich-$UPVER-build
CONFIG_ARGS=(--prefix=$PREFIX
    --with-device=ch4:ofi:sockets --with-libfabric=embedded
    --with-ch4-shmmods=posix,gpudirect
    --with-cuda=$CUDA_HOME --with-cuda-sm=90
    --with-hwloc=embedded --with-pm=hydra
    --disable-fortran --disable-cxx --disable-romio
    --disable-static --enable-shared --disable-dependency-tracking)
export LIBRARY_PATH=$STUB${LIBRARY_PATH:+:$LIBRARY_PATH}
export PATH=$CUDA_HOME/bin:$PATH
STAMP="${CONFIG_ARGS[*]}"
if [ ! -f "$BUILD/config.status" ] || [ "$(cat "$BUILD/.configure-line" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    echo "configure ${CONFIG_ARGS[*]}" > "$LOGDIR/mpich-configure-line.txt"
    T1=$(date +%s)
    (cd "$BUILD" && "$SRC/configure" "${CONFIG_ARGS[@]}") > "$LOGDIR/mpich-configure.log" 2>&1 || {
        tail -n 40 "$LOGDIR/mpich-configure.log" >&2
        die "configure failed (log: $LOGDIR/mpich-configure.log; details in $BUILD/config.log and modules/*/config.log)" \
            "read the first 'error:' in the logs; a missing -lcuda means the stub is wrong, a failed nvcc test means CUDA_HOME or --with-cuda-sm"
    }
    echo "$STAMP" > "$BUILD/.configure-line"
    say "configure took $(( $(date +%s) - T1 )) s"
else
    say "already configured in $BUILD"
fi

# 6. Build and install into a staging DESTDIR.
T1=$(date +%s)
run_logged make make -C "$BUILD" -j"$JOBS" \
    || die "make failed (log: $LOGDIR/mpich-make.log)" "search the log for 'error:'; rerun the script to resume after a fix"
say "make took $(( $(date +%s) - T1 )) s"
STAGE=$WORKDIR/mpich-$UPVER-stage
rm -rf "$STAGE"
run_logged install make -C "$BUILD" install DESTDIR="$STAGE" \
    || die "make install failed (log: $LOGDIR/mpich-install.log)" "see the log"
ROOT=$STAGE$PREFIX

# 7. Slim down: no static libs, libtool archives, docs, man pages; strip ELF files.
rm -rf "$ROOT/share/doc" "$ROOT/share/man" "$ROOT/share/info"
find "$ROOT" \( -name '*.a' -o -name '*.la' \) -delete
find "$ROOT" -type d -empty -delete
while IFS= read -r -d '' f; do
    if is_elf "$f"; then
        case "$f" in
            *.so|*.so.*) strip --strip-unneeded "$f" ;;
            *) strip "$f" ;;
        esac
    fi
done < <(find "$ROOT" -type f -print0)

# 8. libcudart: copy the exact toolkit library when libmpi needs it dynamically.
LIBMPI=$ROOT/lib/libmpi.so.12
[ -e "$LIBMPI" ] || die "$LIBMPI missing after install" "look at $LOGDIR/mpich-install.log"
readelf -d "$LIBMPI" > "$WORKDIR/libmpi.dynamic"
if grep -q 'libcudart.so.13' "$WORKDIR/libmpi.dynamic"; then
    cp -L "$CUDA_HOME/lib64/libcudart.so.13" "$ROOT/lib/libcudart.so.13"
    say "copied libcudart.so.13 ($(stat -c %s "$ROOT/lib/libcudart.so.13") bytes) into lib/"
fi

# 9. Checks: required files, no stub in the tree, no RPATH/RUNPATH to the stub or the build tree.
for f in lib/libmpi.so.12 bin/mpiexec include/mpi.h bin/mpicc; do
    [ -e "$ROOT/$f" ] || die "$PREFIX/$f missing from the install" "look at $LOGDIR/mpich-install.log"
done
if [ -n "$(find "$ROOT" -name 'libcuda.so*')" ]; then die "a libcuda.so was installed" "remove it: the driver's must be used"; fi
bad=""
while IFS= read -r -d '' f; do
    if is_elf "$f"; then
        rp=$(readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' || true)
        case "$rp" in *"$STUB"*|*"$WORKDIR"*|*"$STAGE"*) bad="$bad $f:$rp";; esac
    fi
done < <(find "$ROOT" -type f -print0)
[ -z "$bad" ] || die "RPATH/RUNPATH points at the stub or build dir:$bad" "do not pass the stub as -L/-rpath; keep it in LIBRARY_PATH only"
if grep -rIl -- "$STUB" "$ROOT" >/dev/null 2>&1; then
    die "text files mention the stub dir: $(grep -rIl -- "$STUB" "$ROOT" | tr '\n' ' ')" "the stub must not leak into wrappers/config files"
fi

# 10. Tarball.
TARBALL=$OUTDIR/mpich-$UPVER-cuda-x86_64.tgz
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner -czf "$TARBALL.tmp" "${PREFIX#/}" \
    || die "tar failed" "check free space in $OUTDIR"
mv "$TARBALL.tmp" "$TARBALL"
say "NEEDED of libmpi.so.12: $(grep NEEDED "$WORKDIR/libmpi.dynamic" | grep -oE '\[[^]]+\]' | tr -d '[]' | tr '\n' ' ')"
say "MPIX symbols: $(nm -D --defined-only "$LIBMPI" | grep -oE 'MPIX_(GPU|Query)[A-Za-z_]*' | sort -u | tr '\n' ' ')"
say "wrote $TARBALL ($(du -h "$TARBALL" | cut -f1)) in $(( $(date +%s) - T0 )) s"
