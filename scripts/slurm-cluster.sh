#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/slurm-cluster.sh [--prefix P] [--dir D] up [--local | --netns N] | down | status | check | env | srun [SRUN ARGS...]
#
# A private Slurm cluster on this machine, for tests and trials of Ferry under srun: its own
# munged (own key and socket), slurmctld and slurmd(s) with a generated slurm.conf, all state under
# D (default /run/ferry-slurm/P, P default "fslurm"); nothing of the system's Slurm or munge
# configuration is used or changed (the daemons are told about the files with -f/SLURM_CONF).
#
#   up --local     a one-node cluster in this machine's own network namespace: slurmctld and one
#                  slurmd (node name = this host's name, address 127.0.0.1) on free ports
#   up --netns N   an N-node cluster over network-namespace "hosts" (scripts/netns-hosts.sh, prefix
#                  P): slurmd I runs inside P-hI as node P-hI (10.77.0.I), slurmctld inside P-h1;
#                  every slurmd also gets its own mount namespace with private /tmp and /dev/shm (so
#                  two "nodes" share no session directories or shared-memory segments); what the
#                  jobs need from this machine's /tmp is bound into each node's /tmp at the same
#                  path, as a shared file system would show it: this repository (a clone under /tmp)
#                  and the paths in FERRY_SLURM_SHARE (colon-separated)
#   down           stops the daemons and removes the hosts (netns mode) and D (idempotent)
#   status         sinfo's view; exit 1 unless every node is idle
#   check          exit 0 when this machine can run it (root, slurmd/slurmctld/srun/munged, the
#                  mpi plugins), else prints why and exits 1
#   env            prints the exports for using the cluster (SLURM_CONF, and the prefix to run srun
#                  with in netns mode: FERRY_SLURM_EXEC)
#   srun ARGS...   runs srun with ARGS against the cluster (inside P-h1 in netns mode)
#
# srun --mpi=list shows the plugins; Debian 12's slurm-wlm-basic-plugins has pmi2 and pmix (PMIx v4,
# libpmix2). Root only.
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SCRIPT")
PREFIX=${FERRY_SLURM_PREFIX:-fslurm}
DIR=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) PREFIX=$2; shift 2 ;;
        --dir) DIR=$2; shift 2 ;;
        *) break ;;
    esac
done
DIR=${DIR:-/run/ferry-slurm/$PREFIX}
CONF=$DIR/slurm.conf
NETNS=("$HERE/netns-hosts.sh" --prefix "$PREFIX")

die() { echo "slurm-cluster: $*" >&2; exit 1; }
say() { echo "slurm-cluster: $*" >&2; }

SBIN=/usr/sbin
can_run() {
    [ "$(id -u)" = 0 ] || { echo "not root: the Slurm daemons run as root here"; return 1; }
    local b
    for b in slurmctld slurmd munged; do
        command -v $b >/dev/null 2>&1 || [ -x $SBIN/$b ] || { echo "$b is missing: apt-get install slurm-wlm munge (scripts/setup does it as root)"; return 1; }
    done
    command -v srun >/dev/null 2>&1 || { echo "srun is missing: apt-get install slurm-client"; return 1; }
    local plug; plug=$(ls -d /usr/lib/*/slurm-wlm /usr/lib/slurm /usr/lib64/slurm 2>/dev/null | head -1)
    [ -n "$plug" ] || { echo "no Slurm plugin directory found"; return 1; }
    [ -f "$plug/mpi_pmi2.so" ] || { echo "the pmi2 plugin ($plug/mpi_pmi2.so) is missing"; return 1; }
    [ -f "$plug/mpi_pmix.so" ] || { echo "the pmix plugin ($plug/mpi_pmix.so) is missing (Debian: slurm-wlm-basic-plugins with libpmix2)"; return 1; }
}

bin() { command -v "$1" 2>/dev/null || echo "$SBIN/$1"; }

free_port() {
    # a TCP port nobody listens on, from a range of this prefix
    local base=$(( 20000 + ($(echo -n "$PREFIX" | cksum | cut -d' ' -f1) % 20000) )) p
    for p in $(seq "$base" $((base + 200))); do
        ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
    done
    echo "$base"
}

start_munge() {
    mkdir -p "$DIR/munge"; chmod 700 "$DIR/munge"
    [ -f "$DIR/munge/munge.key" ] || { dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$DIR/munge/munge.key"; }
    "$(bin munged)" --force --socket="$DIR/munge/munge.sock" --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
        --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" 2>>"$DIR/munge/start.log" \
        || { cat "$DIR/munge/start.log" "$DIR/munge/munged.log" >&2 2>/dev/null; die "munged did not start"; }
    for _ in $(seq 1 50); do [ -S "$DIR/munge/munge.sock" ] && break; sleep 0.1; done
    [ -S "$DIR/munge/munge.sock" ] || die "munged made no socket"
    # the socket's directory must be reachable by every user the jobs run as (root here)
}

write_conf() {
    # write_conf CTLHOST CTLADDR CTLPORT DPORT NODELINES...
    local ctlhost=$1 ctladdr=$2 ctlport=$3 dport=$4; shift 4
    local nodes=("$@")
    local names; names=$(printf '%s\n' "${nodes[@]}" | awk '{print $1}' | sed 's/NodeName=//' | paste -sd,)
    mkdir -p "$DIR/state" "$DIR/log"
    cat > "$CONF" <<EOF
# generated by scripts/slurm-cluster.sh ($(date -u +%FT%TZ)); private to $DIR
ClusterName=$PREFIX
SlurmctldHost=$ctlhost($ctladdr)
SlurmctldPort=$ctlport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
LaunchParameters=use_interactive_step
KillWait=5
MinJobAge=30
InactiveLimit=0
SlurmdTimeout=60
SlurmctldTimeout=60
MessageTimeout=30
$(printf '%s\n' "${nodes[@]}")
PartitionName=ferry Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

wait_idle() {
    local want=$1 out="" deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        if grep -qs 'initialization failed\|fatal' "$DIR"/log/*.out; then
            grep -hs 'error\|fatal' "$DIR"/log/*.out >&2 || true
            say "a daemon failed to start (logs: $DIR/log)"
            return 1
        fi
        out=$(run_srun_cmd sinfo -h -o '%T %D' 2>&1 || true)
        local idle; idle=$(echo "$out" | awk '$1=="idle"{n+=$2} END{print n+0}')
        [ "$idle" -ge "$want" ] && return 0
        sleep 0.5
    done
    say "nodes not idle after 60 s: $out"
    tail -20 "$DIR"/log/*.log >&2 2>/dev/null || true
    return 1
}

mode() { cat "$DIR/mode" 2>/dev/null || echo none; }

# run_srun_cmd CMD...: a Slurm client command against this cluster, where its controller is reachable
run_srun_cmd() {
    if [ "$(mode)" = netns ]; then
        SLURM_CONF=$CONF "${NETNS[@]}" exec "$PREFIX-h1" env SLURM_CONF="$CONF" "$@"
    else
        SLURM_CONF=$CONF "$@"
    fi
}

up_local() {
    local host; host=$(hostname -s)
    local cp; cp=$(free_port); local dp=$((cp + 1))
    while ss -Htln "sport = :$dp" 2>/dev/null | grep -q .; do dp=$((dp + 1)); done
    echo local > "$DIR/mode"
    mkdir -p "$DIR/spool-$host"
    start_munge
    local cpus; cpus=4
    write_conf "$host" 127.0.0.1 "$cp" "$dp" "NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN"
    setsid "$(bin slurmctld)" -D -i -f "$CONF" >"$DIR/log/slurmctld.out" 2>&1 < /dev/null &
    echo $! > "$DIR/slurmctld.launcher.pid"
    setsid "$(bin slurmd)" -D -f "$CONF" -N "$host" >"$DIR/log/slurmd-$host.out" 2>&1 < /dev/null &
    echo $! > "$DIR/slurmd.launcher.pid"
    wait_idle 1
}

# sh commands that mount this machine's cgroup file systems again under /sys/fs/cgroup (as seen here)
cgroup_mounts() {
    if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
        echo 'mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup; true'
        return
    fi
    local m="mountpoint -q /sys/fs/cgroup || { mount -t tmpfs -o mode=755 cgroup_root /sys/fs/cgroup"
    local d opts
    for d in /sys/fs/cgroup/*; do
        [ -d "$d" ] && mountpoint -q "$d" || continue
        case "$(stat -fc %T "$d")" in
            cgroup2fs) m="$m; mkdir -p $d && mount -t cgroup2 cgroup2 $d" ;;
            *) opts=$(awk -v p="$d" '$2==p {print $4}' /proc/mounts | tr ',' '\n' | grep -v -e '^rw$' -e '^relatime$' -e '^ro$' | paste -sd,)
               [ -n "$opts" ] && m="$m; mkdir -p $d && mount -t cgroup -o $opts cgroup $d" ;;
        esac
    done
    echo "$m; }; true"
}

up_netns() {
    local n=$1 i
    echo netns > "$DIR/mode"
    "${NETNS[@]}" up "$n" >/dev/null || die "network-namespace hosts could not be made"
    start_munge
    local net=${FERRY_NETNS_NET:-10.77.0} nodes=()
    for i in $(seq 1 "$n"); do nodes+=("NodeName=$PREFIX-h$i NodeAddr=$net.$i CPUs=4 State=UNKNOWN"); done
    write_conf "$PREFIX-h1" "$net.1" 6817 6818 "${nodes[@]}"
    setsid "${NETNS[@]}" exec "$PREFIX-h1" "$(bin slurmctld)" -D -i -f "$CONF" >"$DIR/log/slurmctld.out" 2>&1 < /dev/null &
    # the paths under /tmp that the nodes must see (a private /tmp would hide them): srun starts each
    # task in the caller's directory, and the tasks read the clone's class path
    local shared="" p
    local IFS_=$IFS; IFS=:
    for p in "$(dirname "$HERE")" ${FERRY_SLURM_SHARE:-}; do
        [ -n "$p" ] && [ -e "$p" ] || continue
        p=$(readlink -f "$p")
        case "$p" in /tmp/?*) shared="$shared ${p#/tmp/}" ;; esac
    done
    IFS=$IFS_
    [ -z "$shared" ] || say "nodes see these folders of /tmp at the same path:$(printf ' /tmp/%s' $shared)"
    for i in $(seq 1 "$n"); do
        local h=$PREFIX-h$i
        mkdir -p "$DIR/node-$h/tmp" "$DIR/node-$h/shm" "$DIR/spool-$h"; chmod 1777 "$DIR/node-$h/tmp" "$DIR/node-$h/shm"
        for p in $shared; do mkdir -p "$DIR/node-$h/tmp/$p"; done
        # own /tmp and /dev/shm per node (mount namespace), as on separate machines, with the shared
        # folders bound in first (before /tmp is covered; --rbind carries them along); the mounts stay
        # inside the node's namespace, so this machine's view of $DIR/node-*/tmp stays empty folders.
        # `ip netns exec` mounts a fresh /sys, without /sys/fs/cgroup, which slurmd's cgroup plugin
        # wants to see: the cgroup hierarchies are mounted again there (slurmd uses none of them:
        # proctrack/linuxproc)
        setsid "${NETNS[@]}" exec "$h" unshare --mount --propagation private -- /bin/sh -c \
            'for p in $5; do mount --bind "/tmp/$p" "$1/tmp/$p" || exit 1; done && mount --rbind "$1/tmp" /tmp && mount --bind "$1/shm" /dev/shm && '"$(cgroup_mounts)"' && exec "$2" -D -f "$3" -N "$4"' \
            sh "$DIR/node-$h" "$(bin slurmd)" "$CONF" "$h" "$shared" >"$DIR/log/slurmd-$h.out" 2>&1 < /dev/null &
    done
    wait_idle "$n"
}

down() {
    local m; m=$(mode)
    local f pid
    for f in "$DIR"/slurmd-*.pid "$DIR"/slurmd.launcher.pid "$DIR"/slurmctld.pid "$DIR"/slurmctld.launcher.pid "$DIR"/munge/munged.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [[ "$pid" =~ ^[0-9]+$ ]] && kill -TERM "$pid" 2>/dev/null || true
    done
    if [ "$m" = netns ] || "${NETNS[@]}" status >/dev/null 2>&1; then
        "${NETNS[@]}" down || true
    fi
    sleep 0.5
    for f in "$DIR"/slurmd-*.pid "$DIR"/slurmd.launcher.pid "$DIR"/slurmctld.pid "$DIR"/slurmctld.launcher.pid "$DIR"/munge/munged.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [[ "$pid" =~ ^[0-9]+$ ]] && kill -KILL "$pid" 2>/dev/null || true
    done
    # step daemons (slurmstepd) of this cluster, found by their configuration file
    for pid in $(pgrep -f "slurmstepd" 2>/dev/null || true); do
        tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_CONF=$CONF" && kill -KILL "$pid" 2>/dev/null || true
    done
    # the nodes' bind mounts of shared folders live in their own mount namespaces; should one show
    # here, removing $DIR would delete through it: keep $DIR then
    if grep -qsF " $DIR/" /proc/self/mounts; then
        say "keeping $DIR: something is still mounted below it ($(grep -F " $DIR/" /proc/self/mounts | awk '{print $2}' | head -3 | paste -sd' '))"
        return
    fi
    case "$DIR" in /run/ferry-slurm/*|*/ferry-slurm*) rm -rf --one-file-system "$DIR" ;; *) say "keeping $DIR (not a ferry-slurm directory)" ;; esac
}

cmd=${1:-help}; [ $# -gt 0 ] && shift
case "$cmd" in
    check) why=$(can_run) || { echo "slurm-cluster: $why" >&2; exit 1; }; echo "slurm-cluster: this machine can run a private Slurm cluster" ;;
    up)
        why=$(can_run) || die "cannot run Slurm here: $why"
        how=${1:---local}
        [ -d "$DIR" ] && down
        mkdir -p "$DIR"; chmod 755 "$DIR"
        case "$how" in
            --local) up_local ;;
            --netns) up_netns "${2:-2}" ;;
            *) die "up: --local or --netns N" ;;
        esac
        run_srun_cmd sinfo -N -o '%N %T %c %o' >&2 || true
        say "up ($(mode)); SLURM_CONF=$CONF"
        ;;
    down) [ "$(id -u)" = 0 ] || die "down: not root"; down ;;
    status)
        [ -f "$CONF" ] || die "no cluster at $DIR"
        out=$(run_srun_cmd sinfo -h -N -o '%N %T') || exit 1
        echo "$out"
        ! echo "$out" | awk '{print $2}' | grep -qv '^idle$'
        ;;
    env)
        echo "export SLURM_CONF=$CONF"
        [ "$(mode)" = netns ] && echo "export FERRY_SLURM_EXEC='${NETNS[*]} exec $PREFIX-h1'"
        true
        ;;
    srun) run_srun_cmd srun "$@" ;;
    help|-h|--help) sed -n '4,27p' "$SCRIPT" | sed 's/^# \{0,1\}//' ;;
    *) sed -n '4,27p' "$SCRIPT" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
