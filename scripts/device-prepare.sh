#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/device-prepare.sh
#
# Prepares a GPU run in .device/ (ignored by git; the device tool carries it), because the GPU
# machine has neither Java nor Maven and reaches nothing outside:
#   .device/jdk.tar.xz      a Java 25 runtime made with jlink from this machine's JDK (~22 MB)
#   .device/lib/*.jar       every module jar, every module's test classes (as *-testclasses.jar),
#                           and all run-time and test dependencies (JUnit for the rank runner, JMH,
#                           JCuda with only its driver and runtime natives), but no mpi.jar
#   .device/mpi-system.jar  Open MPI's mpi.jar built by scripts/setup from Debian's 4.1.x sources,
#                           for the GPU machine's system Open MPI 4.1.x (Ubuntu's, not CUDA-aware)
#   .device/kits/*.tgz      CUDA-aware MPI builds: Open MPI 5.0.7 (../shared/device-kit, or
#                           scripts/build-cuda-ompi.sh) and MPICH (scripts/build-cuda-mpich.sh), when present
#   .device/c/              the native C reference source (built with each MPI's mpicc over there)
#   .device/prof/           async-profiler's libasyncProfiler.so (step profile-small), when Maven can fetch it
# Then run scripts/device-run.sh there (see its header), e.g. through the device tool with
# carry [".device"]. Everything must stay under the tool's 64 MiB.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
say() { echo "device-prepare: $*" >&2; }
# first GLOB...: the first existing file among the patterns, or nothing (a pattern that matches nothing
# is not an error: under set -e and pipefail a bare `ls missing* | head -1` would end the script silently)
first() { local f; for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done; return 0; }
trap 'say "FAILED (exit $?) at line $LINENO: $BASH_COMMAND"' ERR
"$REPO/scripts/setup" --for test >/dev/null
. "$REPO/.ferry/env"
export JAVA_HOME=$JDK
D=$REPO/.device
mkdir -p "$D/kits"
rm -rf "$D/lib"; mkdir -p "$D/lib"
# the commit the jars are built from (the GPU machine's copy of the tree has no history of its own)
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!.device' 2>/dev/null || echo '+uncommitted')" > "$D/commit"

say "building all modules (mvn package, no tests) and collecting dependencies"
mvn -B -q -Dstyle.color=never -DskipTests -Dmaven.source.skip -Dmaven.javadoc.skip package dependency:copy-dependencies \
    -DincludeScope=test -DexcludeGroupIds=org.open-mpi -DoutputDirectory="$D/lib" > "$REPO/.ferry/device-prepare-mvn.log" 2>&1 \
    || { tail -30 "$REPO/.ferry/device-prepare-mvn.log"; exit 1; }
for m in */pom.xml; do
    m=${m%/pom.xml}
    for j in "$m"/target/ferry-*.jar; do
        [ -f "$j" ] || continue
        case "$j" in *-tests.jar|*-sources.jar|*-javadoc.jar) continue ;; esac
        cp "$j" "$D/lib/"
    done
    if [ -d "$m/target/test-classes" ] && [ -n "$(ls -A "$m/target/test-classes" 2>/dev/null)" ]; then
        "$JDK/bin/jar" cf "$D/lib/ferry-$m-testclasses.jar" -C "$m/target/test-classes" .
    fi
done
# reactor artifacts copied by copy-dependencies duplicate the fresh ones above
rm -f "$D"/lib/ferry-*-0.1.0-SNAPSHOT-tests.jar
# JCuda natives: keep only the driver and runtime bindings (the PTX compiler alone is 24 MB)
nat=$(first "$D"/lib/jcuda-natives-*-linux-x86_64.jar)
if [ -n "$nat" ]; then
    tmp=$(mktemp -d); (cd "$tmp" && unzip -q "$nat" && rm -f lib/libJNvPTXCompiler-* lib/libJNvrtc-* && zip -q -r "$nat.slim" .)
    mv "$nat.slim" "$nat"; rm -rf "$tmp"
fi
cp "$REPO/.ferry/mpi/mpi.jar" "$D/mpi-system.jar"

if [ ! -f "$D/jdk.tar.xz" ] || [ "$D/jdk.tar.xz" -ot "$REPO/scripts/device-prepare.sh" ]; then
    say "making a Java runtime with jlink"
    rm -rf "$D/jdk" "$D/jdk.tar.xz"
    "$JDK/bin/jlink" --add-modules java.base,java.management,jdk.unsupported,java.logging,java.xml,jdk.management,java.naming,java.compiler,jdk.zipfs,java.desktop,jdk.jfr \
        --strip-debug --no-man-pages --no-header-files --compress=zip-0 --output "$D/jdk"
    (cd "$D" && tar cf - jdk | xz -T0 -6 > jdk.tar.xz && rm -rf jdk)
fi

# the CUDA-aware MPI kits: this checkout's own builds (scripts/build-cuda-ompi.sh, build-cuda-mpich.sh),
# else for Open MPI the shared reference kit
own_ompi=$(first "$REPO"/.ferry/kits/ompi-*-cuda-x86_64.tgz)
shared_ompi=$REPO/../shared/device-kit/ompi-5.0.7-cuda-x86_64.tgz
if [ -n "$own_ompi" ]; then
    say "Open MPI kit: $own_ompi (built here)"; rm -f "$D"/kits/ompi-*
elif [ -f "$shared_ompi" ]; then
    say "Open MPI kit: $shared_ompi (the shared reference kit)"
elif [ -z "$(first "$D"/kits/ompi-*)" ]; then
    say "WARNING: no CUDA-aware Open MPI kit: none in .ferry/kits (scripts/build-cuda-ompi.sh builds one, about 6 minutes)"
    say "         and no shared kit at $shared_ompi; the GPU steps that run under it (cuda) cannot run there"
fi
[ -n "$(first "$REPO"/.ferry/kits/mpich-*-cuda-x86_64.tgz)" ] \
    || say "note: no CUDA-aware MPICH kit in .ferry/kits (scripts/build-cuda-mpich.sh builds one); the mvapich GPU steps need it"
for k in ${own_ompi:-"$shared_ompi"} "$REPO"/.ferry/kits/mpich-*-cuda-x86_64.tgz; do
    [ -f "$k" ] || continue
    b=$(basename "$k" .tgz)
    if [ "$(stat -c %s "$k")" -gt 16000000 ]; then
        # big kits (MPICH with its CUDA datatype kernels: 29 MB gzip) travel as xz (12 MB)
        if [ ! -f "$D/kits/$b.tar.xz" ] || [ "$D/kits/$b.tar.xz" -ot "$k" ]; then
            say "recompressing $(basename "$k") with xz"
            gzip -dc "$k" | xz -T0 -9 > "$D/kits/$b.tar.xz"
        fi
    else
        cp -u "$k" "$D/kits/"
    fi
done
# the native C reference, built here against each MPI family's ABI (libmpi.so.40 of Open MPI 4.1 and
# 5.0 alike; libmpi.so.12 of MPICH): the CUDA-aware kits over there carry no headers
rm -rf "$D/c"; mkdir -p "$D/c"
sh bench/src/main/c/build.sh "$D/c" mpicc.openmpi ferry-osu >/dev/null
command -v mpicc.mpich >/dev/null && sh bench/src/main/c/build.sh "$D/c" mpicc.mpich ferry-osu-mpich >/dev/null
# the smcuda probe in C (bench/experiments/smcuda-probe.c, device-run.sh step smcuda-c), against Open MPI's mpi.h and the CUDA runtime
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$cuda_home/include/cuda_runtime.h" ]; then
    mpicc.openmpi -O2 -I"$cuda_home/include" bench/experiments/smcuda-probe.c -L"$cuda_home/lib64" -lcudart -ldl -o "$D/c/smcuda-probe" \
        || echo "device-prepare: smcuda-probe did not build (step smcuda-c will say so)" >&2
fi
# the NCCL reference (bench/src/main/c/nccl_ref.c), built against the wheel of scripts/install-nccl.sh; NCCL itself is
# not carried (libnccl.so.2 is ~250 MB): the GPU machine's own is used (scripts/device-run.sh nccl finds it, or NCCL_LIB)
[ -f "$REPO/.ferry/wheels/nccl/nvidia/nccl/lib/libnccl.so.2" ] && sh bench/src/main/c/build-nccl.sh "$D/c" >/dev/null
# the staged pipeline in C (bench/experiments/staged-pipeline.c): the native reference for staged's pipeline
mpicc.openmpi -O2 -Wall -o "$D/c/staged-pipeline" bench/experiments/staged-pipeline.c -ldl
# one GPU round trip per way of starting GPU work (bench/src/main/c/launch_floor.c, device-run.sh step launch-floor)
mpicc.openmpi -O2 -std=c11 -Wall -o "$D/c/launch-floor" bench/src/main/c/launch_floor.c -ldl

# async-profiler (Maven Central's tools.profiler:async-profiler, linux-x64) for device-run.sh step profile-small; optional
ap_version=4.1
ap_jar=$HOME/.m2/repository/tools/profiler/async-profiler/$ap_version/async-profiler-$ap_version-linux-x64.jar
[ -f "$ap_jar" ] || mvn -B -q dependency:get -Dartifact=tools.profiler:async-profiler:$ap_version:jar:linux-x64 >/dev/null 2>&1
if [ -f "$ap_jar" ]; then
    mkdir -p "$D/prof" && unzip -o -q -j "$ap_jar" linux-x64/libasyncProfiler.so -d "$D/prof"
else
    echo "device-prepare: async-profiler $ap_version not fetched (step profile-small will say so)" >&2
fi
say "contents:"; du -sh "$D"/* >&2
total=$(du -sm "$D" | cut -f1)
[ "$total" -lt 60 ] || say "WARNING: .device is ${total} MiB: the device tool carries at most 64 MiB with the working tree"
