#!/usr/bin/env bash
# Fault tools for the cluster profile (scripts/stack-cluster.sh): each says what it did and shows
# that it happened. The profile's state directory is $STACK_STATE_DIR, or $MEDIA_GEN_HOME/cluster.
#
#   faults.sh pid NAME            the pid of a process of the profile (pg-N: its Patroni)
#   faults.sh kill NAME           kill -9 by pid, then wait until the pid is gone. NAME: a name of
#                                 scripts/cluster/processes, temporal-<service>-N, haproxy, etcd,
#                                 pg-N (its Patroni and its Postgres: the node crashes) or
#                                 pg-primary (the node Patroni names leader)
#   faults.sh partition NAME      cut one process off the network: every packet of its TCP sockets
#                                 (by port, from ss) and of any socket it opens later (its own cgroup
#                                 v2 group, iptables' cgroup match) is dropped — silently, as a
#                                 partition does, not refused
#   faults.sh heal NAME | heal-all   remove a partition (every partition)
#   faults.sh delay MS            one-way delay MS between every worker process and the Temporal
#                                 frontends (scripts/cluster/delay-proxy.py: this kernel has no netem;
#                                 where it has, `tc qdisc add dev lo root netem delay` delays all of
#                                 loopback, not one path); `delay 0` removes it
#   faults.sh show                the partitions' iptables rules and the current delay
set -euo pipefail
STATE=${STACK_STATE_DIR:-${MEDIA_GEN_HOME:-/var/tmp/media-gen}/cluster}
CGROUP_ROOT=/sys/fs/cgroup/unified
[[ -d $CGROUP_ROOT ]] || CGROUP_ROOT=/sys/fs/cgroup
TAG=mg-fault
die() { printf '[faults] error: %s\n' "$*" >&2; exit 1; }
say() { printf '[faults] %s\n' "$*"; }

leader() {
  local port
  port=$(sed -n 's/^ETCD_PORT=//p' "$STATE/cluster-ports.env")
  curl -s "http://127.0.0.1:$port/v3/kv/range" -X POST -d "{\"key\":\"$(printf '/service/mediagen-cluster/leader' | base64 -w0)\"}" \
    | python3 -c 'import sys, json, base64
kvs = json.load(sys.stdin).get("kvs") or []
print(base64.b64decode(kvs[0]["value"]).decode() if kvs else "")'
}

pidfile_of() {
  local name=$1
  [[ $name == pg-primary ]] && name=$(leader)
  for f in "$STATE/$name.pid" "$STATE/temporal-${name#temporal-}.pid"; do [[ -f $f ]] && { echo "$f"; return; }; done
  die "no process named $1 in $STATE"
}
pid_of() { local f; f=$(pidfile_of "$1") || exit 1; cat "$f"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_gone() { for _ in $(seq 1 300); do gone "$1" && return 0; sleep 0.1; done; die "pid $1 still alive 30 s after SIGKILL"; }

cmd=${1:-}; name=${2:-}
case $cmd in
  pid) pid_of "$name" ;;
  kill)
    [[ $name == pg-primary ]] && { name=$(leader); [[ -n $name ]] || die "Patroni names no leader"; say "the primary is $name"; }
    pid=$(pid_of "$name")
    pids=("$pid")
    # A Postgres node crashes as a whole: its Patroni and its postmaster (whose children follow it).
    if [[ $name == pg-* && -f $STATE/$name/data/postmaster.pid ]]; then pids+=("$(head -n 1 "$STATE/$name/data/postmaster.pid")"); fi
    kill -9 "${pids[@]}"
    for p in "${pids[@]}"; do wait_gone "$p"; done
    say "killed $name with SIGKILL: pid(s) ${pids[*]} gone"
    ;;
  partition)
    pid=$(pid_of "$name")
    group=$CGROUP_ROOT/$TAG-$name
    mkdir -p "$group"
    iptables -I OUTPUT -o lo -m cgroup --path "$TAG-$name" -j DROP -m comment --comment "$TAG:$name"
    # The process and its children join the group: sockets they open from now on are dropped.
    for p in $pid $(pgrep -P "$pid" || true); do echo "$p" >"$group/cgroup.procs"; done
    # Sockets opened before keep the cgroup they were made in: dropped by their local port.
    mapfile -t ports < <(ss -tnpH state established "( src 127.0.0.0/8 )" 2>/dev/null | grep -E "pid=($pid)," \
      | awk '{print $3}' | sed 's/.*://' | sort -u)
    for p in "${ports[@]}"; do
      iptables -I OUTPUT -o lo -p tcp --sport "$p" -j DROP -m comment --comment "$TAG:$name"
      iptables -I OUTPUT -o lo -p tcp --dport "$p" -j DROP -m comment --comment "$TAG:$name"
    done
    say "partitioned $name (pid $pid): ${#ports[@]} open connection(s) and every new one dropped"
    ;;
  heal | heal-all)
    iptables -S OUTPUT | grep -F -- "$TAG:${name}" | sed 's/^-A /-D /' | while read -r rule; do
      eval "iptables $rule"
    done
    for group in "$CGROUP_ROOT/$TAG-$name"*; do
      [[ -d $group ]] || continue
      for p in $(cat "$group/cgroup.procs"); do echo "$p" >"$CGROUP_ROOT/cgroup.procs" 2>/dev/null || true; done
      rmdir "$group"
    done
    say "healed ${name:-every partition}"
    ;;
  delay)
    [[ $name =~ ^[0-9]+$ ]] || die "usage: faults.sh delay MS"
    [[ -f $STATE/worker-latency.port ]] || die "the profile's delay proxy is not set up"
    echo "$name" >"$STATE/worker-latency-ms.tmp" && mv "$STATE/worker-latency-ms.tmp" "$STATE/worker-latency-ms"
    say "delay between workers and Temporal frontends: ${name} ms each way"
    ;;
  show)
    iptables -S OUTPUT | grep -- "$TAG" || true
    echo "delay ms: $(cat "$STATE/worker-latency-ms" 2>/dev/null || echo 0)"
    ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
