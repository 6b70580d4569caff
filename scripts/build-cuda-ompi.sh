#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/build-cuda-ompi.sh [OUTDIR]      (default OUTDIR: <repo>/.ferry/kits)
#
# Rebuilds the CUDA-aware Open MPI 5.0.7 (with Java bindings) from Debian trixie's source
# package openmpi 5.0.7-1 and packs it as OUTDIR/ompi-5.0.7-cuda-x86_64.tgz, whose members are
# opt/ompi-cuda/... (install on the GPU machine with `tar xzf ... -C /`, then
# PATH=/opt/ompi-cuda/bin:$PATH LD_LIBRARY_PATH=/opt/ompi-cuda/lib; the jar is
# /opt/ompi-cuda/lib/mpi.jar).
#
# Configure line (PREFIX=/opt/ompi-cuda, STUB=.ferry/build/cuda-stub, JDK see below):
#   ./configure --prefix=/opt/ompi-cuda \
#     --with-cuda=/usr/local/cuda --with-cuda-libdir=$STUB \
#     --enable-mpi-java --with-jdk-dir=$JDK --disable-mpi-fortran \
#     --with-hwloc=internal --with-libevent=internal --with-pmix=internal --with-prrte=internal \
#     --without-ucx --without-ofi --without-psm2 --without-ucc --without-portals4 \
#     --disable-oshmem --disable-io-romio --disable-static
# Why each option:
#   --with-cuda, --with-cuda-libdir  CUDA-aware build (accelerator/cuda, btl/smcuda, coll/cuda,
#                          the MPIX cuda extension). The driver library libcuda.so.1 does not exist
#                          on the build machine: the libdir is the stub made by
#                          scripts/make-cuda-stub.sh, used at link time only (mca_accelerator_cuda.so
#                          records NEEDED libcuda.so.1, found in the driver at run time; the script
#                          checks that no RPATH/RUNPATH points at the stub).
#   --enable-mpi-java --with-jdk-dir  Java bindings (lib/mpi.jar + libmpi_java.so). JDK defaults
#                          to Temurin 25, so the jar's classes target Java 25 (the runtime used on
#                          the GPU machine); set JDK=/usr/lib/jvm/java-17-openjdk-amd64 for a jar
#                          that also runs on 17 (the shared reference kit was built that way).
#   --disable-mpi-fortran  no Fortran: not used, shorter build.
#   --with-{hwloc,libevent,pmix,prrte}=internal  self-contained: the GPU machine has Ubuntu's
#                          Open MPI 4.1.6 stack whose libpmix/libhwloc must not be mixed in.
#   --without-ucx/ofi/psm2/ucc/portals4  single host; never pick up network libraries the build
#                          machine might have and the GPU machine might lack.
#   --disable-oshmem       no OpenSHMEM (as in the reference kit).
#   --disable-io-romio     MPI-IO still works through Open MPI's own ompio; ROMIO is a big part
#                          of the build time.
#   --disable-static       shared libraries only.
# Debian's patches are unpacked with the source; only those that touch no autotools input are
# applied (the others, libdir.patch/hppa.patch/verbose-ompi-rules.patch, would need autoreconf
# and only matter for Debian's packaging and hppa).
#
# Environment: CUDA_HOME (/usr/local/cuda), JDK (/usr/lib/jvm/temurin-25-jdk-amd64), JOBS (nproc),
# WORKDIR (<repo>/.ferry/build), SRCDIR (<repo>/.ferry/src), REF_KIT (the shared reference
# tarball to compare ompi_info with, default <repo>/../shared/device-kit/ompi-5.0.7-cuda-x86_64.tgz).
# Idempotent: the download, unpack, configure and make steps are skipped/resumed when done.
set -euo pipefail

usage() { echo "usage: $0 [OUTDIR]   (default OUTDIR: <repo>/.ferry/kits)" >&2; }
case "${1:-}" in -h|--help) usage; exit 0;; esac
[ $# -le 1 ] || { usage; exit 2; }

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-$REPO/.ferry/kits}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JDK=${JDK:-/usr/lib/jvm/temurin-25-jdk-amd64}
JOBS=${JOBS:-$(nproc)}
WORKDIR=${WORKDIR:-$REPO/.ferry/build}
SRCDIR=${SRCDIR:-$REPO/.ferry/src}
REF_KIT=${REF_KIT:-$REPO/../shared/device-kit/ompi-5.0.7-cuda-x86_64.tgz}
DEBVER=5.0.7-1
UPVER=5.0.7
PREFIX=/opt/ompi-cuda
TRIXIE_SRC=/etc/apt/sources.list.d/ferry-trixie-src.sources

mkdir -p "$OUTDIR/logs" "$WORKDIR" "$SRCDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGDIR=$OUTDIR/logs
STUB=$WORKDIR/cuda-stub

say() { echo "[$(date +%H:%M:%S)] build-cuda-ompi: $*"; }
die() {
    echo "[$(date +%H:%M:%S)] build-cuda-ompi: ERROR: $1" >&2
    [ $# -gt 1 ] && echo "build-cuda-ompi: what to do: $2" >&2
    exit 1
}
is_elf() { [ "$(head -c4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
run_logged() {
    local name=$1; shift
    local log=$LOGDIR/ompi-$name.log
    say "$name (log: $log)"
    if ! "$@" > "$log" 2>&1; then
        echo "---- last 40 lines of $log ----" >&2; tail -n 40 "$log" >&2
        return 1
    fi
}

[ "$(uname -m)" = x86_64 ] || die "this script builds x86_64 kits only" "run it on an x86_64 machine"
[ -r "$CUDA_HOME/include/cuda.h" ] || die "$CUDA_HOME/include/cuda.h not found" "install the CUDA toolkit headers or set CUDA_HOME"
[ -x "$JDK/bin/javac" ] || die "no javac in $JDK" "install a JDK or set JDK=/path/to/jdk (e.g. /usr/lib/jvm/java-17-openjdk-amd64)"
[ -r "$JDK/include/jni.h" ] || die "no include/jni.h in $JDK" "use a full JDK, not a JRE"
for t in gcc g++ make perl dpkg-source apt-get readelf strip tar patch; do
    command -v $t >/dev/null || die "$t not found" "apt-get install gcc g++ make perl dpkg-dev binutils tar patch"
done

T0=$(date +%s)

# 1. deb-src entry for trixie.
if [ ! -e "$TRIXIE_SRC" ]; then
    say "adding $TRIXIE_SRC"
    cat > "$TRIXIE_SRC" <<'EOF' || die "cannot write $TRIXIE_SRC" "run as root"
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update > "$LOGDIR/ompi-apt-update.log" 2>&1 || die "apt-get update failed (see $LOGDIR/ompi-apt-update.log)" "check the network/mirror"
fi

# 2. Download the source package unless it is already there.
if [ -f "$SRCDIR/openmpi_$DEBVER.dsc" ] && [ -f "$SRCDIR/openmpi_$UPVER.orig.tar.xz" ] \
        && [ -f "$SRCDIR/openmpi_$DEBVER.debian.tar.xz" ]; then
    say "source openmpi=$DEBVER already in $SRCDIR"
else
    if ! grep -qx "Version: $DEBVER" <<< "$(apt-cache showsrc openmpi 2>/dev/null)"; then
        apt-get update > "$LOGDIR/ompi-apt-update.log" 2>&1 || true
    fi
    say "downloading Debian source openmpi=$DEBVER"
    (cd "$SRCDIR" && apt-get source --download-only "openmpi=$DEBVER") > "$LOGDIR/ompi-download.log" 2>&1 \
        || die "apt-get source openmpi=$DEBVER failed: $(grep -m1 -E '^E:' "$LOGDIR/ompi-download.log" || true)" \
               "check 'apt-cache showsrc openmpi' lists $DEBVER (deb-src for trixie in $TRIXIE_SRC, then apt-get update)"
fi

# 3. Unpack (without Debian patches), then apply the patches that touch no autotools input.
SRC=$WORKDIR/openmpi-$UPVER-src
if [ ! -f "$SRC/.unpacked" ]; then
    rm -rf "$SRC" "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    (cd "$SRC.tmp" && dpkg-source --no-check -x --skip-patches "$SRCDIR/openmpi_$DEBVER.dsc" src) > "$LOGDIR/ompi-unpack.log" 2>&1 \
        || die "dpkg-source -x failed (see $LOGDIR/ompi-unpack.log)" "delete $SRCDIR/openmpi_* and run again to re-download"
    mv "$SRC.tmp/src" "$SRC"; rm -rf "$SRC.tmp"
    while read -r p _; do
        case "$p" in ''|\#*) continue;; esac
        files=$(grep -E '^\+\+\+ ' "$SRC/debian/patches/$p" | awk '{print $2}')
        if grep -qE '(configure\.ac|\.am|\.m4|autogen\.(sh|pl)|Makefile\.in|configure|-rules)$' <<< "$files"; then
            say "skipping Debian patch $p (touches autotools inputs: $(echo $files))"
            continue
        fi
        say "applying Debian patch $p"
        (cd "$SRC" && patch -p1 --forward < "debian/patches/$p") >> "$LOGDIR/ompi-unpack.log" 2>&1 \
            || die "Debian patch $p does not apply (see $LOGDIR/ompi-unpack.log)" "remove $SRC and run again, or drop the patch"
    done < "$SRC/debian/patches/series"
    touch "$SRC/.unpacked"
fi

# 4. Stub libcuda for link time only.
"$REPO/scripts/make-cuda-stub.sh" "$STUB" > "$LOGDIR/ompi-stub.log" 2>&1 \
    || die "building the stub libcuda failed (see $LOGDIR/ompi-stub.log)" "run scripts/make-cuda-stub.sh $STUB by hand"

# 5. Configure (out of tree), skipped when the same line was already configured.
BUILD=$WORKDIR/openmpi-$UPVER-build
CONFIG_ARGS=(--prefix=$PREFIX
    --with-cuda=$CUDA_HOME --with-cuda-libdir=$STUB
    --enable-mpi-java --with-jdk-dir=$JDK --disable-mpi-fortran
    --with-hwloc=internal --with-libevent=internal --with-pmix=internal --with-prrte=internal
    --without-ucx --without-ofi --without-psm2 --without-ucc --without-portals4
    --disable-oshmem --disable-io-romio --disable-static)
STAMP="${CONFIG_ARGS[*]}"
if [ ! -f "$BUILD/config.status" ] || [ "$(cat "$BUILD/.configure-line" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    echo "configure ${CONFIG_ARGS[*]}" > "$LOGDIR/ompi-configure-line.txt"
    T1=$(date +%s)
    (cd "$BUILD" && "$SRC/configure" "${CONFIG_ARGS[@]}") > "$LOGDIR/ompi-configure.log" 2>&1 || {
        tail -n 40 "$LOGDIR/ompi-configure.log" >&2
        die "configure failed (log: $LOGDIR/ompi-configure.log; details in $BUILD/config.log)" \
            "read the first 'error' in the log: CUDA (stub at $STUB, CUDA_HOME) or Java (JDK=$JDK) are the usual suspects"
    }
    echo "$STAMP" > "$BUILD/.configure-line"
    say "configure took $(( $(date +%s) - T1 )) s"
else
    say "already configured in $BUILD"
fi

# 6. Build and install into a staging DESTDIR.
T1=$(date +%s)
run_logged make make -C "$BUILD" -j"$JOBS" \
    || die "make failed (log: $LOGDIR/ompi-make.log)" "search the log for 'error'; rerun the script to resume after a fix"
say "make took $(( $(date +%s) - T1 )) s"
STAGE=$WORKDIR/openmpi-$UPVER-stage
rm -rf "$STAGE"
run_logged install make -C "$BUILD" install DESTDIR="$STAGE" \
    || die "make install failed (log: $LOGDIR/ompi-install.log)" "see the log"
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

# 8. Checks: required files, no stub in the tree, no RPATH/RUNPATH to the stub or build tree.
for f in lib/libmpi.so.40 lib/mpi.jar lib/libmpi_java.so bin/mpirun bin/ompi_info include/mpi.h \
         lib/openmpi/mca_accelerator_cuda.so; do
    [ -e "$ROOT/$f" ] || die "$PREFIX/$f missing from the install" "look at $LOGDIR/ompi-install.log and ompi-configure.log (CUDA/Java detection)"
done
if [ -n "$(find "$ROOT" -name 'libcuda.so*')" ]; then die "a libcuda.so was installed" "remove it: the driver's must be used"; fi
bad=""
while IFS= read -r -d '' f; do
    if is_elf "$f"; then
        rp=$(readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' || true)
        case "$rp" in *"$STUB"*|*"$WORKDIR"*|*"$STAGE"*) bad="$bad $f:$rp";; esac
    fi
done < <(find "$ROOT" -type f -print0)
[ -z "$bad" ] || die "RPATH/RUNPATH points at the stub or build dir:$bad" "keep the stub out of -rpath"
leak=$(grep -rIl -- "$STUB" "$ROOT" 2>/dev/null || true)
[ -z "$leak" ] || say "note: these text files mention the stub dir (informational, not used at run time): $(echo $leak)"

# 9. ompi_info of the staged tree (the stub on LD_LIBRARY_PATH only so the CUDA component loads
#    here), and comparison with the reference kit when present.
info() { # info PREFIXDIR OUTFILE
    OPAL_PREFIX=$1 PATH=$1/bin:$PATH LD_LIBRARY_PATH=$1/lib:$STUB "$1/bin/ompi_info" > "$2" 2>&1 || true
}
info "$ROOT" "$LOGDIR/ompi_info-built.txt"
grep -E 'MPI extensions:.*cuda' "$LOGDIR/ompi_info-built.txt" >/dev/null \
    || die "ompi_info shows no cuda MPI extension (see $LOGDIR/ompi_info-built.txt)" "check CUDA detection in $LOGDIR/ompi-configure.log"
grep -E 'Java bindings: yes' "$LOGDIR/ompi_info-built.txt" >/dev/null \
    || die "ompi_info shows no Java bindings" "check the Java part of $LOGDIR/ompi-configure.log"
grep -E 'MCA accelerator: cuda' "$LOGDIR/ompi_info-built.txt" >/dev/null \
    || die "ompi_info lists no accelerator/cuda component" "check $ROOT/lib/openmpi/mca_accelerator_cuda.so and the CUDA part of the configure log"
if [ -f "$REF_KIT" ]; then
    REFDIR=$(mktemp -d)
    tar xzf "$REF_KIT" -C "$REFDIR"
    info "$REFDIR$PREFIX" "$LOGDIR/ompi_info-reference.txt"
    norm() { sed -E 's/^ +//' "$1" | grep -vE '^(Prefix|Configure command line|Configured on|Built on|Configured by|Configure host|Built host|Built by|Package):' | sort; }
    diff <(norm "$LOGDIR/ompi_info-reference.txt") <(norm "$LOGDIR/ompi_info-built.txt") > "$LOGDIR/ompi_info-diff.txt" || true
    say "ompi_info vs reference: $(grep -c '^[<>]' "$LOGDIR/ompi_info-diff.txt" || true) differing lines ($LOGDIR/ompi_info-diff.txt; < reference, > this build)"
    rm -rf "$REFDIR"
fi

# 10. Tarball.
TARBALL=$OUTDIR/ompi-$UPVER-cuda-x86_64.tgz
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner -czf "$TARBALL.tmp" "${PREFIX#/}" \
    || die "tar failed" "check free space in $OUTDIR"
mv "$TARBALL.tmp" "$TARBALL"
say "$(grep -E 'MPI extensions|Java bindings' "$LOGDIR/ompi_info-built.txt" | sed -E 's/^ +//' | tr '\n' ';')"
say "wrote $TARBALL ($(du -h "$TARBALL" | cut -f1)) in $(( $(date +%s) - T0 )) s"
