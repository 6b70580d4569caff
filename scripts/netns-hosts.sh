#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The Ferry authors
# Usage: scripts/netns-hosts.sh [--prefix P] up [N] | down | status | check | hosts | exec HOST CMD... | agent [SSH-OPTIONS] HOST CMD...
#
# Several "hosts" on one machine, for multi-host MPI tests: N network namespaces P-h1 .. P-hN
# (default P=ferry, N=2), each with one interface fe0 at 10.77.0.<i>/24, joined by a bridge that
# lives in a namespace of its own (P-sw). Nothing is added to the machine's own network namespace
# (no interface, no address, no route), so traffic stays between these namespaces. Each command run
# in a "host" also gets its own UTS namespace with the host's name as host name, so MPI launchers
# see different nodes; /etc/netns/P-hI/hosts (bind-mounted over /etc/hosts by `ip netns exec`, only
# inside the namespace) resolves the host names.
#
#   up [N]      creates the hosts (idempotent: an existing set is torn down and made again)
#   down        ends every process inside them and removes them (idempotent)
#   status      lists the hosts and their addresses; exit 1 when they are not up
#   check       exit 0 when this machine can make them (root, iproute2, unshare, veth and bridge
#               devices), else prints why and exits 1; changes nothing
#   hosts       prints a hostfile line per host: "P-hI slots=2" (Open MPI syntax)
#   exec HOST CMD...              runs CMD inside HOST, with HOST as host name
#   agent [SSH-OPTIONS] HOST CMD  the same with ssh's conventions, for the launchers: options
#               before HOST are ignored, and the words of CMD are joined and run by sh -c. With
#               FERRY_NETNS_AGENT_ENV=ssh, CMD starts, as under ssh, with a login's environment
#               (PATH, HOME, USER, LOGNAME, SHELL) instead of the launcher's: what the ranks of
#               another host see is then only what the launcher forwards.
#               Open MPI: --mca plm_rsh_agent scripts/netns-agent; MPICH's Hydra:
#               -launcher ssh -launcher-exec scripts/netns-agent (netns-agent calls this script).
#
# Environment: FERRY_NETNS_PREFIX (P), FERRY_NETNS_NET (default 10.77.0: the /24 used inside).
# Root only (namespaces and veth devices need CAP_NET_ADMIN and CAP_SYS_ADMIN).
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
PREFIX=${FERRY_NETNS_PREFIX:-ferry}
NET=${FERRY_NETNS_NET:-10.77.0}
if [ "${1:-}" = "--prefix" ]; then PREFIX=$2; shift 2; fi
SW=$PREFIX-sw

die() { echo "netns-hosts: $*" >&2; exit 1; }
usage() { sed -n '4,32p' "$SCRIPT" | sed 's/^# \{0,1\}//'; }

case "$NET" in
    10.*|192.168.*|172.1[6-9].*|172.2[0-9].*|172.3[01].*) ;;
    *) die "FERRY_NETNS_NET=$NET is not in a private range (10/8, 172.16/12, 192.168/16)" ;;
esac

can_run() {
    [ "$(id -u)" = 0 ] || { echo "not root: network namespaces and veth devices need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"; return 1; }
    command -v ip >/dev/null 2>&1 || { echo "the ip command is missing: apt-get install iproute2"; return 1; }
    command -v unshare >/dev/null 2>&1 || { echo "unshare is missing: apt-get install util-linux"; return 1; }
    ip netns list >/dev/null 2>&1 || { echo "ip netns does not work here: $(ip netns list 2>&1 | head -1)"; return 1; }
    local probe=$PREFIX-probe$$ err
    if ! err=$(ip netns add "$probe" 2>&1); then echo "cannot create a network namespace: $err"; return 1; fi
    local ok=0 why=""
    if ! why=$(ip -n "$probe" link add name vprobe0 type veth peer name vprobe1 2>&1); then ok=1; why="no veth devices: $why"
    elif ! why=$(ip -n "$probe" link add name bprobe type bridge 2>&1); then ok=1; why="no bridge devices: $why"
    elif ! why=$(ip netns exec "$probe" unshare --uts -- true 2>&1); then ok=1; why="unshare --uts fails: $why"
    fi
    ip netns delete "$probe" 2>/dev/null || true
    [ $ok = 0 ] || { echo "$why"; return 1; }
}

hosts() {
    # the hosts that exist, in order
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+$" | sort -t h -k2 -n || true
}

down() {
    local ns
    for ns in $(hosts) "$SW"; do
        ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" || continue
        # processes started inside (launcher daemons, ranks): TERM, then KILL what is left
        local pids; pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then
            kill -TERM $pids 2>/dev/null || true
            sleep 1
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        fi
        ip netns delete "$ns" 2>/dev/null || true
        rm -rf "/etc/netns/$ns"
    done
}

up() {
    local n=${1:-2} i
    [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 200 ] || die "up: '$n' is not a number of hosts in 1..200"
    local why; why=$(can_run) || die "cannot make network-namespace hosts: $why"
    down
    ip netns add "$SW"
    ip -n "$SW" link set lo up
    ip -n "$SW" link add name br0 type bridge
    ip -n "$SW" link set br0 type bridge stp_state 0 forward_delay 0 2>/dev/null || true
    ip -n "$SW" link set br0 up
    local hostsfile
    hostsfile=$(printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'; for i in $(seq 1 "$n"); do printf '%s.%d\t%s-h%d\n' "$NET" "$i" "$PREFIX" "$i"; done)
    for i in $(seq 1 "$n"); do
        local ns=$PREFIX-h$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip -n "$SW" link add name "p$i" type veth peer name fe0 netns "$ns"
        ip -n "$SW" link set "p$i" master br0
        ip -n "$SW" link set "p$i" up
        ip -n "$ns" addr add "$NET.$i/24" dev fe0
        ip -n "$ns" link set fe0 up
        mkdir -p "/etc/netns/$ns"
        echo "$hostsfile" > "/etc/netns/$ns/hosts"
    done
    # wait until every host reaches the first one (the bridge forwards at once; addresses need DAD)
    for _ in $(seq 1 50); do
        if ! ip -n "$PREFIX-h1" -o addr show dev fe0 2>/dev/null | grep -q tentative; then break; fi
        sleep 0.1
    done
    status
}

status() {
    local h any=1
    for h in $(hosts); do
        any=0
        echo "$h $(ip -n "$h" -o -4 addr show dev fe0 2>/dev/null | awk '{print $4}') netns:[$(ip netns exec "$h" stat -L -c %i /proc/self/ns/net 2>/dev/null || echo ?)]"
    done
    [ $any = 0 ] || { echo "netns-hosts: no hosts with prefix $PREFIX are up" >&2; return 1; }
}

run_in() {
    # run_in HOST CMDLINE [ENV...]: CMDLINE by sh -c inside HOST's network namespace, with HOST as
    # host name; with ENV (NAME=VALUE words), in exactly that environment
    local host=$1 cmdline=$2 ns=$1; shift 2
    case "$host" in
        "$NET".*) ns=$PREFIX-h${host##*.} ;;
    esac
    ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns" || die "no host '$host' (namespace $ns): run scripts/netns-hosts.sh up first"
    local env=(); [ $# = 0 ] || env=(env -i "$@")
    exec ip netns exec "$ns" unshare --uts -- "${env[@]}" /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$ns" "$cmdline"
}

cmd=${1:-help}; [ $# -gt 0 ] && shift
case "$cmd" in
    check) why=$(can_run) || { echo "netns-hosts: $why" >&2; exit 1; }; echo "netns-hosts: this machine can make network-namespace hosts" ;;
    up) up "${1:-2}" ;;
    down) [ "$(id -u)" = 0 ] || die "down: not root"; down ;;
    status) status ;;
    hosts) for h in $(hosts); do echo "$h slots=${1:-2}"; done ;;
    exec)
        [ $# -ge 2 ] || die "usage: exec HOST CMD..."
        host=$1; shift
        # keep the words as they are: quote each for sh -c
        line=""; for w in "$@"; do line="$line '${w//\'/\'\\\'\'}'"; done
        run_in "$host" "$line"
        ;;
    agent)
        # ssh conventions: skip options (and the values of those that take one), then HOST, then the command words
        while [ $# -gt 0 ]; do
            case "$1" in
                -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
                -*) shift ;;
                *) break ;;
            esac
        done
        [ $# -ge 1 ] || die "agent: no host"
        host=$1; shift
        if [ "${FERRY_NETNS_AGENT_ENV:-}" = ssh ]; then
            run_in "$host" "$*" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
                USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh
        fi
        run_in "$host" "$*"
        ;;
    help|-h|--help) usage ;;
    *) usage >&2; exit 2 ;;
esac
