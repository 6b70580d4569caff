#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/build-mvapich2.sh [--check]
#
# Builds MVAPICH2 2.3.7 (shared memory + TCP, its own Hydra mpiexec) once into a cache folder
# outside the clone and prints the install prefix on stdout (everything else goes to stderr).
# The tests run Ferry's `mvapich` backend under this MVAPICH2 (testkit: ferry.test.mvapich2.home).
#
#   source   $MVAPICH2_TARBALL, else mvapich2-2.3.7-1.tar.gz in <repo>/shared/mvapich2/ or
#            <repo>/../shared/mvapich2/ (a release tarball with its generated configure)
#   prefix   ${FERRY_CACHE:-$HOME/.cache/ferry}/mvapich2-2.3.7-<first 12 hex of the tarball's SHA-256>
#   stamp    <prefix>/.ferry-build-stamp: the tarball's SHA-256 and the fix level; an install whose
#            stamp matches (and that has bin/mpiexec and lib/libmpi.so.12) is reused as it is
#   log      <prefix>.log (configure, make, make install); its tail is printed when a step fails
#
# Configure line:
#   ./configure --prefix=PREFIX --with-device=ch3:nemesis --with-pm=hydra
#               --disable-fortran --disable-cxx --disable-romio --disable-mcast --enable-shared
#               --disable-static --disable-dependency-tracking
#   ch3:nemesis     shared memory + TCP (the default device, ch3:mrail, needs InfiniBand verbs at run time)
#   --disable-romio no MPI-IO (Ferry does not use it): a shorter build
#   --with-pm=hydra Hydra's mpiexec only. MVAPICH2's own mpirun_rsh (--with-pm=hydra:mpirun) is left
#                   out: its host-file parser needs yacc/bison to build (absent on the build machine:
#                   "ylwrap: yacc: command not found") and it needs ssh to run; Ferry's tests use mpiexec.
# Source fixes (sed; the script fails if a fix no longer matches), both in the nemesis TCP netmod:
#   tcp_init.c   'mpierrno' undeclared (a typo for mpi_errno in the getaddrinfo error check)
#   tcp_getip.c  incompatible type for argument 2 of 'inet_ntop' (a struct in_addr passed by value,
#                and an array of char pointers as the output buffer)
#
# Without the tarball, an install in the cache built by this script at the current fix level is
# used (the newest; its stamp names the tarball's checksum); with neither, the script exits 3.
#
# --check: only says whether a matching install exists (exit 0 and prints the prefix) or not (1).
# Exit status: 0 (the prefix is on stdout), 1 (a failure: the build, a tool, a fix), 2 (usage),
# 3 (neither a cached install nor the source tarball: MVAPICH2 is not available here).
# Environment: MVAPICH2_TARBALL, FERRY_CACHE, JOBS (default nproc).
# Concurrent runs (two test modules at once) wait for each other on a lock file.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { echo "[$(date +%H:%M:%S)] build-mvapich2: $*" >&2; }
die() {
    echo "[$(date +%H:%M:%S)] build-mvapich2: ERROR: $1" >&2
    [ $# -gt 1 ] && echo "build-mvapich2: what to do: $2" >&2
    exit 1
}

CHECK_ONLY=0
case "${1:-}" in
    --check) CHECK_ONLY=1 ;;
    -h|--help) sed -n '4,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "usage: scripts/build-mvapich2.sh [--check]" >&2; exit 2 ;;
esac

# Fix level: bump when fix_sources or the configure line changes, so cached installs are rebuilt.
FIX_LEVEL=2
VERSION=2.3.7
TARNAME=mvapich2-$VERSION-1.tar.gz

TARBALL=${MVAPICH2_TARBALL:-}
if [ -z "$TARBALL" ]; then
    for c in "$REPO/shared/mvapich2/$TARNAME" "$REPO/../shared/mvapich2/$TARNAME"; do
        [ -f "$c" ] && { TARBALL=$c; break; }
    done
fi
[ -z "${MVAPICH2_TARBALL:-}" ] || [ -f "$MVAPICH2_TARBALL" ] || die "MVAPICH2_TARBALL=$MVAPICH2_TARBALL is not a file" \
    "set MVAPICH2_TARBALL to $TARNAME (the release tarball with its generated configure), or unset it"
CACHE=${FERRY_CACHE:-$HOME/.cache/ferry}
if [ -z "$TARBALL" ]; then
    # no source: an install this script made before, at this fix level (the newest one)
    for stamp in $(ls -t "$CACHE"/mvapich2-$VERSION-*/.ferry-build-stamp 2>/dev/null); do
        p=$(dirname "$stamp")
        if grep -q " fixes=$FIX_LEVEL\$" "$stamp" && [ -x "$p/bin/mpiexec" ] && [ -e "$p/lib/libmpi.so.12" ]; then
            say "no source tarball here; using the MVAPICH2 $VERSION install in the cache: $p ($(cat "$stamp"))"
            echo "$p"
            exit 0
        fi
    done
    echo "[$(date +%H:%M:%S)] build-mvapich2: MVAPICH2 $VERSION is not available: no install in $CACHE and no source tarball" \
        "(looked for $TARNAME in $REPO/shared/mvapich2/ and $(dirname "$REPO")/shared/mvapich2/)" >&2
    echo "build-mvapich2: what to do: download $TARNAME (the release tarball with its generated configure, from" \
        "https://mvapich.cse.ohio-state.edu/downloads/) into one of those folders, or set MVAPICH2_TARBALL to it" >&2
    exit 3
fi
TARBALL=$(cd "$(dirname "$TARBALL")" && pwd)/$(basename "$TARBALL")

SHA=$(sha256sum "$TARBALL" | cut -d' ' -f1)
PREFIX=$CACHE/mvapich2-$VERSION-${SHA:0:12}
STAMP=$PREFIX/.ferry-build-stamp
WANT_STAMP="sha256=$SHA fixes=$FIX_LEVEL"
LOG=$PREFIX.log
BUILD=$CACHE/build/mvapich2-$VERSION-${SHA:0:12}

installed() {
    [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT_STAMP" ] \
        && [ -x "$PREFIX/bin/mpiexec" ] && [ -e "$PREFIX/lib/libmpi.so.12" ]
}

if [ $CHECK_ONLY = 1 ]; then
    if installed; then echo "$PREFIX"; exit 0; fi
    say "no MVAPICH2 install matching $TARBALL (sha256 ${SHA:0:12}) at $PREFIX"
    exit 1
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/mvapich2-$VERSION-${SHA:0:12}.lock"
if ! flock -n 9; then
    say "another build of $PREFIX is running; waiting for it (lock $CACHE/mvapich2-$VERSION-${SHA:0:12}.lock)"
    flock 9
fi

if installed; then
    say "reusing MVAPICH2 $VERSION at $PREFIX (stamp matches the tarball's sha256 ${SHA:0:12}, fix level $FIX_LEVEL)"
    echo "$PREFIX"
    exit 0
fi

# ---- build ------------------------------------------------------------------------------------
for tool in cc make sha256sum tar sed flock; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed" "install it (Debian: apt-get install build-essential)"
done
JOBS=${JOBS:-$(nproc)}
[ -e "$PREFIX" ] && say "removing the stale install at $PREFIX (no stamp, or a different tarball/fix level)"
rm -rf "$PREFIX" "$BUILD"
mkdir -p "$BUILD"
: > "$LOG"
say "building MVAPICH2 $VERSION from $TARBALL (sha256 ${SHA:0:12}) into $PREFIX"
say "log: $LOG (about 10 minutes on 2 cores, most of it configure)"

fail() {
    # fail STEP: prints the log's tail and stops
    echo "---- last 60 lines of $LOG ----" >&2
    tail -60 "$LOG" >&2
    echo "---- end of log ----" >&2
    die "MVAPICH2 $1 failed (full log: $LOG; build folder kept: $BUILD)" \
        "read the log; the install is not used until a build succeeds (rerun this script)"
}

tar -xzf "$TARBALL" -C "$BUILD" >>"$LOG" 2>&1 || fail "unpacking"
SRC=$BUILD/mvapich2-$VERSION-1
[ -d "$SRC" ] || SRC=$(find "$BUILD" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -x "$SRC/configure" ] || die "$TARBALL has no generated configure (at $SRC)" "use the release tarball with its configure"

fix() {
    # fix FILE DESCRIPTION SED-EXPRESSION CHECK-PATTERN: applies a sed fix and checks that it took
    local file=$SRC/$1 what=$2 expr=$3 check=$4
    [ -f "$file" ] || die "source fix '$what': $1 does not exist in this tarball" "update fix_sources in $0 for this MVAPICH2"
    cp "$file" "$file.orig"
    sed -i -e "$expr" "$file"
    if cmp -s "$file" "$file.orig" || ! grep -q -- "$check" "$file"; then
        die "source fix '$what' no longer applies to $1 (the pattern did not match)" "update fix_sources in $0 for this MVAPICH2"
    fi
    say "fixed $1: $what"
    echo "fixed $1: $what" >>"$LOG"
}

fix_sources() {
    # 1. tcp_init.c uses an undeclared variable in its getaddrinfo error check
    #    (error: 'mpierrno' undeclared ...; did you mean 'mpi_errno'?)
    fix src/mpid/ch3/channels/nemesis/netmod/tcp/tcp_init.c "getaddrinfo check: mpierrno -> mpi_errno" \
        's/MPIR_ERR_CHKANDJUMP2(mpierrno != 0,/MPIR_ERR_CHKANDJUMP2(mpi_errno != 0,/' \
        'MPIR_ERR_CHKANDJUMP2(mpi_errno != 0,'
    # 2. tcp_getip.c passes a struct in_addr by value and an array of pointers to inet_ntop
    #    (error: incompatible type for argument 2 of 'inet_ntop')
    fix src/mpid/ch3/channels/nemesis/netmod/tcp/tcp_getip.c "inet_ntop(AF_INET, &addr, char ip[...])" \
        's/char\* ip\[INET_ADDRSTRLEN\];/char ip[INET_ADDRSTRLEN];/; s/inet_ntop(AF_INET, addr, ip, sizeof(ip));/inet_ntop(AF_INET, \&addr, ip, sizeof(ip));/' \
        'inet_ntop(AF_INET, &addr, ip, sizeof(ip));'
    grep -q 'char ip\[INET_ADDRSTRLEN\];' "$SRC/src/mpid/ch3/channels/nemesis/netmod/tcp/tcp_getip.c" \
        || die "source fix 'char ip[INET_ADDRSTRLEN]' no longer applies to tcp_getip.c" "update fix_sources in $0 for this MVAPICH2"
}
fix_sources

say "configure"
(cd "$SRC" && ./configure --prefix="$PREFIX" --with-device=ch3:nemesis --with-pm=hydra \
    --disable-fortran --disable-cxx --disable-romio --disable-mcast --enable-shared --disable-static \
    --disable-dependency-tracking) >>"$LOG" 2>&1 || fail "configure"
say "make -j$JOBS"
(cd "$SRC" && make -j"$JOBS") >>"$LOG" 2>&1 || fail "make"
say "make install"
(cd "$SRC" && make install) >>"$LOG" 2>&1 || fail "make install"
[ -x "$PREFIX/bin/mpiexec" ] && [ -e "$PREFIX/lib/libmpi.so.12" ] \
    || fail "install (no bin/mpiexec or lib/libmpi.so.12 under $PREFIX)"
echo "$WANT_STAMP" > "$STAMP"
rm -rf "$BUILD"
say "built MVAPICH2 $VERSION into $PREFIX ($("$PREFIX/bin/mpichversion" 2>/dev/null | sed -n 's/^MVAPICH2 Version:[[:space:]]*//p' || true))"
echo "$PREFIX"
