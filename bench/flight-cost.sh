#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# What the flight recorder costs the 8-byte allReduce on host buffers (dev.ferry.bench.FlightRecorderCost:
# over MPI, and on a transport that does nothing: the checked front alone), in one go: ROUNDS rounds,
# each running, one job after the other,
#   before      the code before the recorder (--base-lib: its bench/target/lib), events off
#   ring=0      this build with -Dferry.flight.ring=0: the recorder skipped at a test of a constant
#   this build  this build as shipped: the ring kept; Ferry's JFR events off, then on
# and prints every line and, per setting, the median over the rounds of the per-round medians.
#
#   bench/flight-cost.sh [--rounds N] [--np N] [--backend ompi] [--mpi openmpi|mpich] [--base-lib DIR]
#
# Build first: mvn -pl bench -am package -DskipTests (and the same in a checkout of the code before, for
# --base-lib). The jobs oversubscribe when NP is above the cores here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=3 np=2 backend=ompi family=openmpi baselib=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --np) np=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        --mpi) family=$2; shift 2 ;;
        --base-lib) baselib=$2; shift 2 ;;
        -h|--help) sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "flight-cost.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -1 | cut -d. -f1; }
java=""
for c in "${FERRY_JAVA:-}" "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    if [ -n "$c" ] && [ -x "$c" ] && [ "$(java_major "$c" || echo 0)" -ge 25 ] 2>/dev/null; then java=$c; break; fi
done
[ -n "$java" ] || { echo "flight-cost.sh: no Java 25 or newer found: set FERRY_JAVA or JAVA_HOME" >&2; exit 1; }
jar=$(ls "$here"/target/ferry-bench-*.jar 2>/dev/null | grep -v -e '-tests.jar' -e '-sources.jar' | head -1)
[ -n "$jar" ] || { echo "flight-cost.sh: no bench/target/ferry-bench-*.jar: build with mvn -pl bench -am package -DskipTests" >&2; exit 1; }
if [ "$family" = mpich ]; then
    launch=(mpiexec.mpich -n "$np")
else
    launch=(mpirun -np "$np")
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
    [ "$np" -gt "$(nproc)" ] && launch+=(--oversubscribe)
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
    export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}
fi
jopts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Djmh.ignoreLock=true -Djava.awt.headless=true
       -XX:-BackgroundCompilation -Dferry.backend="$backend" -Dferry.log=quiet)
run() { # run LABEL CLASSPATH EVENTS [JVM OPTIONS...]
    local label=$1 cp=$2 events=$3; shift 3
    "${launch[@]}" "$java" "${jopts[@]}" "$@" -cp "$cp" dev.ferry.bench.FlightRecorderCost --backend "$backend" --events "$events" --label "$label" \
        | grep '^flight-cost ' | tee -a "$log"
}
log=$(mktemp)
echo "flight-cost: $rounds rounds, $np ranks, backend $backend, ${launch[0]}; $(nproc) cores; $(uptime | sed 's/.*load/load/')"
for r in $(seq "$rounds"); do
    [ -n "$baselib" ] && run before "$jar:$baselib/*" off
    run ring=0 "$jar:$here/target/lib/*" off -Dferry.flight.ring=0
    run "this build" "$jar:$here/target/lib/*" off,on
done
echo "over the rounds (us per call; allReduce: slowest rank, frontAlone: rank 0): the median of the rounds' medians, and the lowest of their 10th percentiles"
sed -n 's/^flight-cost \(.*\) events=\([a-z]*\) \([a-zA-Z]*\): \([0-9.]*\) us (\([0-9.]*\)-.*/\3, \1 events=\2\t\4\t\5/p' "$log" > "$log.tsv"
cut -f1 "$log.tsv" | sort -u | while read -r key; do
    medians=$(awk -F'\t' -v k="$key" '$1 == k { print $2 }' "$log.tsv" | sort -n)
    low=$(awk -F'\t' -v k="$key" '$1 == k { print $3 }' "$log.tsv" | sort -n | head -1)
    echo "$medians" | awk -v k="$key" -v low="$low" '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
        printf "  %-36s median %.4f  p10 %.4f  (%d rounds)\n", k, m, low, NR }'
done
rm -f "$log" "$log.tsv"
