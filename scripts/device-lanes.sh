#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage (on the GPU machine, from the repository root, after scripts/device-prepare.sh here):
#   scripts/device-lanes.sh LIMIT_S LANE...
#   LANE = "NAME|VAR=value;VAR=value|step step"
# e.g. scripts/device-lanes.sh 520 "pair|CUDA_VISIBLE_DEVICES=0,1;SPREAD=1|trust" "shared|CUDA_VISIBLE_DEVICES=2;MPS=1;TRUST_NP=2 4|trust"
#
# Runs scripts/device-run.sh once per lane, all lanes at once, each on the GPUs its
# CUDA_VISIBLE_DEVICES names, with a work folder and an output folder of its own (MPS=1 lanes get an
# MPS daemon of their own, serving only their GPUs). A lane still running after LIMIT_S seconds is
# stopped with everything it started. Then $OUT holds summary.md (every lane's summary, one after
# another), failures.md (where any failed) and lanes.tgz (each lane's logs, rank reports and files).
# For correctness suites: lanes share the host's cores, memory bandwidth and PCIe, so time
# benchmarks in a run of scripts/device-run.sh alone.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
[ $# -ge 2 ] || { echo "usage: $0 LIMIT_S 'NAME|VAR=value;...|step...' ..." >&2; exit 2; }
LIMIT=$1; shift
OUT=${OUT:-$REPO/device-out}
L=/tmp/ferry-lanes
rm -rf "$L"; mkdir -p "$OUT" "$L"
# unpack the Java runtime and the MPI kits once, before the lanes start (each lane would otherwise race to)
FERRY_WORK=$L/unpack OUT=$L/unpack/out scripts/device-run.sh > "$L/unpack.log" 2>&1

names=()
for lane in "$@"; do
    IFS='|' read -r name settings steps <<< "$lane"
    names+=("$name")
    mkdir -p "$L/$name/out"
    (
        export FERRY_WORK=$L/$name/work OUT=$L/$name/out
        IFS=';' read -r -a vars <<< "$settings"
        for v in "${vars[@]}"; do [ -n "$v" ] && export "${v?}"; done
        # shellcheck disable=SC2086 # the steps are words
        exec timeout -k 15 "$LIMIT" scripts/device-run.sh $steps
    ) > "$L/$name/run.log" 2>&1 &
    echo "lane $name ($settings): $steps, pid $!"
done
wait

for name in "${names[@]}"; do
    {
        echo "# lane $name"; echo
        if [ -f "$L/$name/out/summary.md" ]; then cat "$L/$name/out/summary.md"; else echo "(no summary: the lane wrote none)"; fi
        grep -q "done; summary in" "$L/$name/run.log" || { echo; echo "**lane $name was stopped after $LIMIT s**; its last lines:"; echo '```'; tail -5 "$L/$name/run.log"; echo '```'; }
        echo
    } >> "$OUT/summary.md"
    [ -f "$L/$name/out/failures.md" ] && { echo "# lane $name"; cat "$L/$name/out/failures.md"; } >> "$OUT/failures.md"
    # a lane stopped at LIMIT_S made no logs.tgz: take its work folder as it is
    [ -f "$L/$name/out/logs.tgz" ] || tar czf "$L/$name/out/logs.tgz" -C "$L/$name/work" . 2>/dev/null
    cp "$L/$name/run.log" "$L/$name/out/"
done
tar czf "$OUT/lanes.tgz" -C "$L" $(for n in "${names[@]}"; do echo "$n/out"; done) 2>/dev/null
cat "$OUT/summary.md"
