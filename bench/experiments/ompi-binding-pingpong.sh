#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Backend ompi's two paths on host buffers: 8-byte ping-pong latency and 4 MiB bandwidth between
# 2 ranks (dev.ferry.examples.PingPong: one way = median round trip / 2), the paths alternated
# ROUNDS times so that a noisy neighbour hits both alike.
#   bench/experiments/ompi-binding-pingpong.sh [ROUNDS] [REPS]
# Needs: mvn -pl examples -am package (examples/target/lib) and, for the java path, mpi.jar.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
REPS=${2:-2000}
JAVA=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
MPIJAR=${FERRY_MPI_JAR:-$(ls .ferry/mpi/mpi.jar "$HOME"/.m2/repository/org/open-mpi/mpi/local/mpi-local.jar 2>/dev/null | head -1)}
CP="examples/target/lib/*${MPIJAR:+:$MPIJAR}"
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_btl_base_warn_component_unused=0
ROOT=(); [ "$(id -u)" = 0 ] && ROOT=(--allow-run-as-root)
for r in $(seq 1 "$ROUNDS"); do
    for b in ffm java; do
        out=$(mpirun "${ROOT[@]}" --oversubscribe -np 2 "$JAVA" --enable-native-access=ALL-UNNAMED -cp "$CP" \
            -Dferry.backend=ompi -Dferry.ompi.binding=$b -Dferry.log=quiet dev.ferry.examples.PingPong --sizes 8,4M --reps "$REPS" 2>&1)
        lat=$(echo "$out" | awk '$1=="host" && $2=="8" {print $5" "$6}')
        bw=$(echo "$out" | awk '$1=="host" && $2=="4" {print $7" "$8}')
        echo "round $r $b: 8 B one-way ${lat}, 4 MiB ${bw}"
    done
done
