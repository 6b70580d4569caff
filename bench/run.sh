#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Runs Ferry's benchmarks under mpirun (or Slurm's srun: --launcher srun): the Java suite (dev.ferry.bench.BenchMain, JMH in every
# rank), the native C reference (ferry-osu) with the same sizes and policy, then the report
# (results.md + results.png). Needs no Maven: only a JDK 25 (java), the class path and an MPI.
#
#   bench/run.sh [--suite quick|full|tiny] [--np N] [--hostfile FILE] [--launcher mpirun|srun] [--out DIR] ... [-- LAUNCHER-ARGS]
#
# See bench/README.md, or run with --help.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
    cat <<'EOF'
usage: bench/run.sh [options] [-- extra launcher arguments]
  --suite quick|full|tiny   sizes and iteration policy (default quick: 8 B..8 MiB, about a minute
                            per backend and memory kind on 2 cores; full: 8 B..256 MiB)
  --np N                    ranks (default 2)
  --hostfile FILE           run across the nodes of FILE (passed to mpirun --hostfile / mpiexec -f)
  --mpi openmpi|mpich       launcher family (default openmpi); mpich runs the mvapich backend
  --launcher mpirun|srun    mpirun: the family's own launcher (default); srun: Slurm's srun, with
                            --mpi=pmix for openmpi and --mpi=pmi2 for mpich, in the current allocation
                            (or a new one: put srun's options such as -N 2 after --; --hostfile is not used)
  --backends LIST|all       Ferry backends to measure (default all: every available one)
  --mem LIST|auto           pageable,pinned,device (default auto: what this machine can do); with
                            device, the Java suite also times one device-to-device copy of each size
                            on rank 0's GPU (d2dcopy-TAG.csv) and the report gives each device
                            collective's ratio to it
  --benchmarks LIST         latency,bw,bibw,bcast,allreduce,reducescatter,allgather,alltoall
                            (default all)
  --sizes LIST              message sizes instead of the suite's, e.g. 8,4k,1M
  --warmup N --iterations N batches per run instead of the suite's
  --time-limit SECONDS      a budget for the Java suite and the C reference together: each stops
                            cleanly before its next run once it is spent (results so far kept)
  --out DIR                 results folder (default bench/target/results/SUITE-DATE)
  --tune                    instead of the suites: time every collective on every algorithm of the
                            planner (dev.ferry.bench.Tune) on the backend Ferry picks (or the one of
                            --backends), write the cost table DIR/costs.tsv for ferry.collectives.table
                            and DIR/tune.md (fastest algorithm per size against the planner's choice);
                            --suite quick: 6 sizes (8 B, 1 KiB, 64 KiB, 1 MiB, 16 MiB, 256 MiB), full: 11; --sizes as below
  --collectives LIST        with --tune: allReduce,broadcast,reduce,reduceScatter,allGather,allToAll,
                            gather,scatter (default all)
  --no-java | --no-native   skip the Java suite or the C reference
  --report-only             only make results.md/results.png from --out
  --oversubscribe | --no-oversubscribe
                            default: oversubscribe only when np > cores here and no hostfile
  --java PATH               java (default: $FERRY_JAVA, $JAVA_HOME/bin/java, java on PATH)
  --classpath CP            Java class path (default: bench/target/ferry-bench-*.jar, bench/target/lib/*,
                            and the launched Open MPI's mpi.jar)
  --mpi-jar JAR             the launched Open MPI's mpi.jar (default: $FERRY_MPI_JAR, next to mpirun
                            in ../lib, $(ompi_info libdir), then ~/.m2's org/open-mpi/mpi/local)
  --mpirun PATH             launcher (default mpirun, or mpiexec.mpich for --mpi mpich)
  --mpicc PATH              compiler wrapper for the C reference (default: mpicc / mpicc.mpich next to
                            the launcher, else on the PATH)
  --native-bin PATH         a prebuilt C reference to run instead of building one (e.g. built with another
                            install of the same MPI ABI where the launched MPI has no headers)
environment: FERRY_JAVA_OPTS  extra JVM options for the ranks (e.g. -Djava.library.path=... for JCuda)
EOF
}

suite=quick np=2 limit=0 hostfile="" family=openmpi kind=mpirun out="" java="" cp="" mpijar="" mpirun="" mpicc="" nativebin=""
run_java=1 run_native=1 report_only=0 over=auto parse_only=0 tune=0 tunecoll="" tunebackend="" tunesizes=""
pass=()       # options passed to BenchMain (and, for the C reference, through --print-native-args)
extra=()      # extra launcher arguments
while [ $# -gt 0 ]; do
    case "$1" in
        --suite) suite=$2; shift 2 ;;
        --np|-np|-n) np=$2; shift 2 ;;
        --hostfile) hostfile=$2; shift 2 ;;
        --mpi) family=$2; shift 2 ;;
        --launcher) kind=$2; shift 2 ;;
        --backends) tunebackend=$2; pass+=("$1" "$2"); shift 2 ;;
        --sizes) tunesizes=$2; pass+=("$1" "$2"); shift 2 ;;
        --mem|--benchmarks|--warmup|--iterations) pass+=("$1" "$2"); shift 2 ;;
        --tune) tune=1; shift ;;
        --collectives) tunecoll=$2; shift 2 ;;
        --time-limit) limit=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-java) run_java=0; shift ;;
        --no-native) run_native=0; shift ;;
        --report-only) report_only=1; shift ;;
        --oversubscribe) over=yes; shift ;;
        --no-oversubscribe) over=no; shift ;;
        --java) java=$2; shift 2 ;;
        --classpath|-cp) cp=$2; shift 2 ;;
        --mpi-jar) mpijar=$2; shift 2 ;;
        --mpirun) mpirun=$2; shift 2 ;;
        --mpicc) mpicc=$2; shift 2 ;;
        --native-bin) nativebin=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --parse-only) parse_only=1; shift ;;
        --) shift; extra+=("$@"); break ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$family" in openmpi|mpich) ;; *) echo "run.sh: --mpi must be openmpi or mpich" >&2; exit 2 ;; esac
case "$kind" in mpirun|srun) ;; *) echo "run.sh: --launcher must be mpirun or srun" >&2; exit 2 ;; esac
if [ "$kind" = srun ] && [ -n "$hostfile" ]; then
    echo "run.sh: --hostfile is for mpirun; under srun the nodes come from the allocation (or srun options after --, e.g. -N 2)" >&2; exit 2
fi
# --parse-only (what ./ferry bench checks before it builds): the options are valid, nothing runs
[ $parse_only = 0 ] || exit 0
[ -n "$out" ] || out="$here/target/results/$suite-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---- Java and its class path ---------------------------------------------------------------
java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -1 | cut -d. -f1; }
if [ -z "$java" ]; then
    for c in "${FERRY_JAVA:-}" "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
        if [ -n "$c" ] && [ -x "$c" ] && [ "$(java_major "$c" || echo 0)" -ge 25 ] 2>/dev/null; then java=$c; break; fi
    done
fi
if [ -z "$java" ] || [ "$(java_major "$java" || echo 0)" -lt 25 ] 2>/dev/null; then
    echo "run.sh: no Java 25 or newer found${java:+ ($java is older)}: pass --java, or set FERRY_JAVA or JAVA_HOME" >&2
    exit 1
fi
[ -n "$mpirun" ] || { [ "$family" = mpich ] && mpirun=mpiexec.mpich || mpirun=mpirun; }
# mpirun above stays the family's launcher (it finds the family's mpi.jar and mpicc); srun launches
srun=""; [ "$kind" = srun ] && srun=${FERRY_SRUN:-srun}
if [ -z "$mpicc" ]; then
    # the compiler wrapper of the launcher's own MPI, so that the C reference matches it
    # (Debian's plain mpicc follows the alternatives system, which may name the other MPI)
    mpicc=mpicc; names="mpicc.openmpi mpicc"; [ "$family" = mpich ] && { mpicc=mpicc.mpich; names="mpicc.mpich mpicc"; }
    lb=$(command -v "$mpirun" 2>/dev/null || true)
    for n in $names; do
        if [ -n "$lb" ] && [ -x "$(dirname "$(readlink -f "$lb")")/$n" ]; then mpicc="$(dirname "$(readlink -f "$lb")")/$n"; break; fi
    done
fi

find_mpi_jar() {
    if [ -n "$mpijar" ]; then echo "$mpijar"; return; fi
    if [ -n "${FERRY_MPI_JAR:-}" ]; then echo "$FERRY_MPI_JAR"; return; fi
    local bin libdir
    bin=$(command -v "$mpirun" 2>/dev/null || true)
    if [ -n "$bin" ]; then
        bin=$(readlink -f "$bin")
        if [ -f "$(dirname "$bin")/../lib/mpi.jar" ]; then readlink -f "$(dirname "$bin")/../lib/mpi.jar"; return; fi
        if [ -x "$(dirname "$bin")/ompi_info" ]; then
            libdir=$("$(dirname "$bin")/ompi_info" --path libdir --parsable 2>/dev/null | sed -n 's/^path:libdir://p' | head -1)
            if [ -n "$libdir" ] && [ -f "$libdir/mpi.jar" ]; then echo "$libdir/mpi.jar"; return; fi
        fi
    fi
    if [ -f "$HOME/.m2/repository/org/open-mpi/mpi/local/mpi-local.jar" ]; then
        echo "$HOME/.m2/repository/org/open-mpi/mpi/local/mpi-local.jar"; return
    fi
}

if [ -z "$cp" ]; then
    jar=$(ls "$here"/target/ferry-bench-*.jar 2>/dev/null | grep -v -e '-tests.jar' -e '-sources.jar' | head -1 || true)
    if [ -z "$jar" ] || [ ! -d "$here/target/lib" ]; then
        echo "run.sh: bench/target/ferry-bench-*.jar and bench/target/lib/ are missing: build them first with" >&2
        echo "        mvn -B -pl bench -am package -DskipTests     (or pass --classpath)" >&2
        exit 1
    fi
    cp="$jar:$here/target/lib/*"
    # mpi.jar serves only backend ompi's Java-bindings path (-Dferry.ompi.binding=java); without it ompi runs through java.lang.foreign
    mj=$( [ "$family" = openmpi ] && find_mpi_jar || mpirun=mpirun find_mpi_jar )
    if [ -n "$mj" ]; then
        cp="$cp:$mj"
    elif [ "$family" = openmpi ]; then
        echo "run.sh: note: no mpi.jar found for $mpirun: backend ompi runs through java.lang.foreign only (pass --mpi-jar or FERRY_MPI_JAR for its mpi.jar path)" >&2
    fi
fi
# -XX:-BackgroundCompilation: a method is compiled while its caller waits (in the warm-up batches), instead of
# running interpreted beside a background compile; otherwise a rank in the interpreter, or a compiler thread
# taking its core, stalls measured batches of every rank of a collective by milliseconds
# (bench/results/2026-11-24-h100x1-mps-short-allreduce.md: 8-byte allreduce batches of 1.3 us with stalls of 9-12 us
# on 2 cores, none with it)
jopts=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Djmh.ignoreLock=true -Djava.awt.headless=true
       -XX:-BackgroundCompilation)
# shellcheck disable=SC2206
[ -n "${FERRY_JAVA_OPTS:-}" ] && jopts+=(${FERRY_JAVA_OPTS})
if [ "$kind" = srun ] && [ "$family" = openmpi ] && [[ " ${FERRY_JAVA_OPTS:-} " != *" -Djava.library.path="* ]]; then
    # mpirun puts Open MPI's libdir (libmpi_java.so) on java.library.path of the Java programs it starts; srun does not
    # (the mpi.jar that scripts/setup builds finds it by itself; an Open MPI's own mpi.jar needs this)
    ompilib=$(ompi_info --path libdir 2>/dev/null | sed 's/.*: *//' || true)
    [ -n "$ompilib" ] && jopts+=("-Djava.library.path=$ompilib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/java/packages/lib:/usr/lib64:/lib64:/lib:/usr/lib")
fi

# ---- the launcher --------------------------------------------------------------------------
cores=$(nproc 2>/dev/null || echo 1)
oversubscribed=0
if [ "$over" = yes ] || { [ "$over" = auto ] && [ "$kind" = mpirun ] && [ -z "$hostfile" ] && [ "$np" -gt "$cores" ]; }; then
    oversubscribed=1
fi
launch=("$mpirun")
if [ "$kind" = srun ]; then
    # srun: the allocation's nodes; every variable of this environment reaches the ranks (--export=ALL)
    launch=("$srun" "--mpi=$( [ "$family" = openmpi ] && echo pmix || echo pmi2 )" -n "$np")
    [ "$over" = yes ] && launch+=(--overcommit)
    if [ "$family" = openmpi ]; then
        export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}
        if [ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ] && { [ -f /.dockerenv ] || [ -f /run/.containerenv ] || grep -qaE 'docker|containerd|kubepods|lxc' /proc/1/cgroup 2>/dev/null; }; then
            export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_sm_single_copy_mechanism=${OMPI_MCA_btl_sm_single_copy_mechanism:-none}
        fi
    fi
    genv=()
    fwd() { :; }
elif [ "$family" = openmpi ]; then
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
    if [ "$oversubscribed" = 1 ]; then
        if "$mpirun" --version 2>&1 | grep -q -E 'Open MPI\)? 5|prte'; then launch+=(--map-by :OVERSUBSCRIBE)
        else launch+=(--oversubscribe)
        fi
    fi
    [ -n "$hostfile" ] && launch+=(--hostfile "$hostfile")
    launch+=(-np "$np")
    # in containers ptrace-based single copy (CMA) is not allowed: fall back to copy-in/copy-out
    if [ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ] && { [ -f /.dockerenv ] || [ -f /run/.containerenv ] || grep -qaE 'docker|containerd|kubepods|lxc' /proc/1/cgroup 2>/dev/null; }; then
        export OMPI_MCA_btl_vader_single_copy_mechanism=none   # Open MPI 4 (vader)
        export OMPI_MCA_btl_sm_single_copy_mechanism=${OMPI_MCA_btl_sm_single_copy_mechanism:-none}   # Open MPI 5 (sm)
        echo "[bench] container detected: btl vader/sm single_copy_mechanism=none (host copies go through a shared buffer;"
        echo "        set OMPI_MCA_btl_vader_single_copy_mechanism yourself to choose otherwise)"
    fi
    export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}
    fwd() { launch+=(-x "$1"); }
else
    [ -n "$hostfile" ] && launch+=(-f "$hostfile")
    launch+=(-n "$np")
    genv=()
    fwd() { genv+=("$1"); }
fi
export FERRY_BENCH_OVERSUBSCRIBED=$oversubscribed
# Ferry's settings (FERRY_*) and NCCL's (NCCL_*) reach the ranks on every host
for v in $(compgen -e | grep -E '^(FERRY_|NCCL_)[A-Za-z0-9_]*$' | grep -v '^FERRY_BENCH_LAUNCH$' || true); do fwd "$v"; done
if [ -n "${LD_LIBRARY_PATH:-}" ]; then fwd LD_LIBRARY_PATH; fi
launch+=("${extra[@]}")
# the launcher plus the environment it forwards (MPICH takes one -genvlist)
launcher() {
    if [ "$kind" = mpirun ] && [ "$family" = mpich ] && [ "${#genv[@]}" -gt 0 ]; then
        local IFS=,
        echo "-genvlist" "${genv[*]}"
    fi
}

echo "[bench] suite $suite, $np ranks ($family, ${srun:-$mpirun}$( [ -n "$srun" ] && echo " ${launch[1]}")$( [ -n "$hostfile" ] && echo ", hosts from $hostfile")); results in $out"
if [ "$oversubscribed" = 1 ]; then
    echo "[bench] NOTE: $np ranks on $cores cores: oversubscribed; waiting ranks yield their core and latency is inflated"
fi

# ---- tuning the collectives planner (instead of the suites) -----------------------------------
if [ "$tune" = 1 ]; then
    targs=(--out "$out")
    [ "$suite" = full ] || targs+=(--quick)
    [ -n "$tunesizes" ] && targs+=(--sizes "$tunesizes")
    [ -n "$tunecoll" ] && targs+=(--collectives "$tunecoll")
    bopt=(); if [ -n "$tunebackend" ] && [ "$tunebackend" != all ]; then bopt=("-Dferry.backend=$tunebackend"); fi
    export FERRY_TUNE_LAUNCH="(set below)" FERRY_COMMIT=${FERRY_COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
    fwd FERRY_TUNE_LAUNCH; fwd FERRY_COMMIT
    cmd=("${launch[@]}" $(launcher) "$java" "${jopts[@]}" "${bopt[@]}" -cp "$cp" dev.ferry.bench.Tune "${targs[@]}")
    export FERRY_TUNE_LAUNCH="${cmd[*]}"
    echo "[bench] ${cmd[*]}"
    "${cmd[@]}" || { s=$?; echo "[bench] tuning failed (exit $s)" >&2; exit $s; }
    echo "[bench] cost table: $out/costs.tsv (use it with -Dferry.collectives.table=$out/costs.tsv); report: $out/tune.md"
    exit 0
fi

# ---- Java suite ------------------------------------------------------------------------------
status=0
SECONDS=0   # the --time-limit budget starts here
if [ "$report_only" = 0 ] && [ "$run_java" = 1 ]; then
    export FERRY_BENCH_LAUNCH="(set below)"
    fwd FERRY_BENCH_LAUNCH
    # shellcheck disable=SC2207
    # with the C reference to follow, the Java suite gets two thirds of the budget
    tl=(); [ "$limit" -gt 0 ] && tl=(--time-limit "$( [ "$run_native" = 1 ] && echo $(( limit * 2 / 3 )) || echo "$limit" )")
    cmd=("${launch[@]}" $(launcher) "$java" "${jopts[@]}" -cp "$cp" dev.ferry.bench.BenchMain --suite "$suite" --out "$out" --tag "$family" "${pass[@]}" "${tl[@]}")
    export FERRY_BENCH_LAUNCH="${cmd[*]}"
    echo "[bench] ${cmd[*]}"
    "${cmd[@]}" || { status=$?; echo "[bench] the Java suite failed (exit $status); JMH's output: $out/jmh-$family.log" >&2; }
fi

# ---- native C reference ----------------------------------------------------------------------
if [ "$report_only" = 0 ] && [ "$run_native" = 1 ]; then
    name=ferry-osu; [ "$family" = mpich ] && name=ferry-osu-mpich
    bindir="$here/target/native"
    mkdir -p "$bindir" 2>/dev/null || bindir="$out/native-bin"
    if [ -n "$nativebin" ]; then
        bindir=$(cd "$(dirname "$nativebin")" && pwd); name=$(basename "$nativebin")
        echo "[bench] native C reference: prebuilt $bindir/$name"
    else
        sh "$here/src/main/c/build.sh" "$bindir" "$mpicc" "$name" || true
    fi
    if [ -x "$bindir/$name" ]; then
        # the same sizes, benchmarks, memory kinds and batches as the Java suite, from the Java suite's own definition
        if nat=$("$java" -cp "$cp" dev.ferry.bench.BenchMain --suite "$suite" "${pass[@]}" --print-native-args); then
            read -r -a nargs <<< "$nat"
            # shellcheck disable=SC2207
            tl=()
            if [ "$limit" -gt 0 ]; then
                left=$(( limit - SECONDS ))
                [ "$left" -lt 1 ] && left=1
                tl=(--time-limit "$left")
            fi
            ncmd=("${launch[@]}" $(launcher) "$bindir/$name" "${nargs[@]}" --out "$out/native-$family.csv" "${tl[@]}")
            echo "[bench] ${ncmd[*]}"
            "${ncmd[@]}" || { s=$?; echo "[bench] the native C reference failed (exit $s)" >&2; [ "$status" = 0 ] && status=$s; }
        else
            echo "[bench] native C reference skipped: could not get its arguments from BenchMain" >&2
            [ "$status" = 0 ] && status=1
        fi
    else
        echo "[bench] native C reference skipped: no binary (see above)"
    fi
fi

# ---- report ------------------------------------------------------------------------------------
if "$java" -Djava.awt.headless=true -cp "$cp" dev.ferry.bench.Report "$out"; then
    echo "[bench] table: $out/results.md"
    [ -f "$out/results.png" ] && echo "[bench] plot:  $out/results.png"
else
    echo "[bench] the report could not be made from $out" >&2
    [ "$status" = 0 ] && status=1
fi
exit "$status"
