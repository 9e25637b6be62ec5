# shellcheck shell=bash
# The `cluster` profile of scripts/stack.sh (sourced by it; not run on its own): a distributed
# deployment on this one machine, every part on loopback with ports of its own, so that losing any
# one process (or the Postgres primary) is something the service must survive.
#
#   etcd              one member: Patroni's distributed configuration store (the leader key)
#   pg-1, pg-2        two Patroni nodes (run as the `postgres` user), each managing its own
#                     PostgreSQL: one primary, one streaming standby in synchronous mode
#                     (synchronous_mode: a commit is acknowledged once the standby has it, so the
#                     standby Patroni promotes never lacks an acknowledged commit). Patroni fails
#                     over on its own when the primary's leader key expires (ttl 10 s)
#   haproxy           one HAProxy: the stable Postgres endpoint (health-checks each node's Patroni
#                     REST API, GET /primary: only the leader answers 200; sessions to a node marked
#                     down are cut so clients reconnect to the new primary) and the Temporal
#                     frontends' load balancer (gRPC over TCP, round robin per connection)
#   temporal-*        Temporal 1.32.0 (the prod profile's cached build) as separate services:
#                     frontend-1, -2, history-1, -2, matching-1, -2, worker; ringpop membership on
#                     127.0.0.1; 64 history shards; Postgres persistence and SQL visibility through
#                     haproxy; the prod profile's dynamic config (fairness on)
#   minio             as in the other profiles
#   gateway-1, -2 and two processes of each worker fleet (scripts/cluster/processes), started by
#                     the prod profile's up_apps: same build directories, overrides file, secrets
#
# Every process's pid file is $STATE/<name>.pid (Postgres' postmaster: $STATE/pg-N/data/postmaster.pid);
# `up cluster` reuses what answers and starts what is missing (a node killed by a fault comes back,
# a Patroni node as the new standby), `down cluster` stops everything. Fault tools:
# scripts/cluster/faults.sh.

CLUSTER_TEMPORAL_SERVICES=(frontend-1 frontend-2 history-1 history-2 matching-1 matching-2 worker)
CLUSTER_PG_NODES=(pg-1 pg-2)
# Debian (bookworm) packages of the profile, at the versions it was tested with. A missing one is
# installed at that version; one installed at another version (a Debian point or security release)
# is used as it is, with a note: the archive keeps only a package's newest version, so insisting on
# the tested one would fail every install after such a release.
CLUSTER_APT=(patroni=3.0.2-1 etcd-server=3.4.23-4+b4 etcd-client=3.4.23-4+b4 haproxy=2.6.12-1+deb12u4
  iptables=1.8.9-2 iproute2=6.1.0-3)

use_cluster_processes() { # the gateways and fleets up_apps starts: the cluster's list, not prod's
  PROD_GATEWAYS=(); PROD_WORKERS=(); PROD_ROLES=()
  local name command roles
  while read -r name command roles; do
    case $command in
      gateway) PROD_GATEWAYS+=("$name") ;;
      worker) PROD_WORKERS+=("$name"); PROD_ROLES[$name]=$roles ;;
    esac
  done < <(grep -v '^#' "$ROOT/scripts/cluster/processes")
}

install_cluster() {
  install_cluster_packages
  install_prod
}

install_cluster_packages() {
  local want=() spec have
  for spec in "${CLUSTER_APT[@]}"; do
    have=$(dpkg-query -W -f '${db:Status-Status} ${Version}' "${spec%%=*}" 2>/dev/null || true)
    if [[ $have != installed\ * ]]; then
      want+=("$spec")
    elif [[ ${have#installed } != "${spec#*=}" ]]; then
      log "note: ${spec%%=*} ${have#installed } is installed (the cluster profile was tested with ${spec#*=})"
    fi
  done
  if ((${#want[@]})); then
    [[ $(id -u) == 0 ]] || die "missing ${want[*]}: install them with apt-get (needs root)"
    log "apt-get install ${want[*]}"
    apt-get update -qq >&2
    # The packages' own services are not used (the profile runs its own processes on its own ports).
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >&2 \
      || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]%%=*}" >&2 \
      || die "apt-get install ${want[*]%%=*} failed"
  fi
}

cluster_ports() { # chosen once and kept with the data (Temporal's membership and cluster metadata name them)
  local f=$STATE/cluster-ports.env name s
  if [[ ! -f $f ]]; then
    local names=(ETCD_PORT ETCD_PEER_PORT PG_LB_PORT TEMPORAL_LB_PORT HAPROXY_STATS_PORT)
    for name in "${CLUSTER_PG_NODES[@]}"; do
      s=${name//-/_}; s=${s^^}
      names+=("${s}_PORT" "${s}_REST_PORT")
    done
    for name in "${CLUSTER_TEMPORAL_SERVICES[@]}"; do
      s=${name//-/_}; s=${s^^}
      names+=("T_${s}_GRPC" "T_${s}_MEMBERSHIP" "T_${s}_HTTP" "T_${s}_METRICS")
    done
    listen_ports "${names[@]}" >"$f.tmp" || die "could not choose the cluster's ports"
    mv "$f.tmp" "$f"
  fi
  # shellcheck disable=SC1090
  source "$f"
}

port_of() { local v=$1; echo "${!v}"; }   # port_of NAME — the value of the port variable NAME

# ---------------------------------------------------------------- etcd
etcd_ready() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

up_etcd() {
  if pid_alive "$STATE/etcd.pid" && etcd_ready; then log "etcd: reusing (pid $(cat "$STATE/etcd.pid"), port $ETCD_PORT)"; return; fi
  stop_pidfile "$STATE/etcd.pid"
  mkdir -p "$STATE/etcd"
  # Patroni 3.0 speaks etcd's v3 API through its JSON gateway (the `etcd3` section of its config).
  setsid etcd --name etcd-1 --data-dir "$STATE/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster "etcd-1=http://127.0.0.1:$ETCD_PEER_PORT" \
    --log-level warn >"$STATE/logs/etcd.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE/etcd.pid"
  wait_for_process etcd "$STATE/etcd.pid" "$STATE/logs/etcd.log" etcd_ready
  log "etcd: started (pid $(cat "$STATE/etcd.pid"), port $ETCD_PORT)"
}

# ---------------------------------------------------------------- Postgres under Patroni
patroni_config() { # patroni_config NODE — its YAML, written where the postgres user reads it
  local node=$1 s port rest
  s=${node//-/_}; s=${s^^}
  port=$(port_of "${s}_PORT"); rest=$(port_of "${s}_REST_PORT")
  mkdir -p "$STATE/$node"
  cat >"$STATE/$node/patroni.yml" <<YAML
scope: mediagen-cluster
name: $node
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd3:
  host: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    # A dead primary's leader key expires after ttl: failover within about ttl + loop_wait.
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    # Commits wait for the standby: a promoted standby has every acknowledged commit. With the
    # standby gone, Patroni lets the primary commit alone (not synchronous_mode_strict), so one
    # node's loss never stops writes: that window is the documented loss case (docs/operations/cluster.md).
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 400
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 6
        max_replication_slots: 6
        fsync: "on"
        synchronous_commit: "on"
        full_page_writes: "on"
        shared_buffers: 64MB
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: 127.0.0.1:$port
  connect_address: 127.0.0.1:$port
  data_dir: $STATE/$node/data
  bin_dir: $(pg_bin)
  pgpass: $STATE/$node/pgpass
  # A node that comes back after a failover rejoins as the standby, rewound (or copied anew).
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: $STATE/$node
    # Per-statement counts for the capacity benchmark (npm run bench:capacity-cluster): every
    # database's statements, those run inside trigger functions (their pg_notify) included.
    shared_preload_libraries: pg_stat_statements
    pg_stat_statements.track: all
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication replicator 127.0.0.1/32 trust
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
YAML
  [[ $(id -u) == 0 ]] && chown -R postgres:postgres "$STATE/$node"
  return 0
}

patroni_rest() { local s=${1//-/_}; s=${s^^}; echo "http://127.0.0.1:$(port_of "${s}_REST_PORT")"; }
patroni_running() { curl -s "$(patroni_rest "$1")/patroni" | grep -q '"state": *"running"'; }
cluster_leader() { # the node Patroni names leader, if any
  curl -s "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -X POST -d "{\"key\":\"$(printf '/service/mediagen-cluster/leader' | base64 -w0)\"}" 2>/dev/null \
    | python3 -c 'import sys, json, base64
kvs = json.load(sys.stdin).get("kvs") or []
print(base64.b64decode(kvs[0]["value"]).decode() if kvs else "")' 2>/dev/null || true
}
pg_lb_writable() { psql "postgres://postgres@127.0.0.1:$PG_LB_PORT/postgres?connect_timeout=3" -Atqc 'select not pg_is_in_recovery()' 2>/dev/null | grep -q t; }
standby_streaming() { [[ $(psql "postgres://postgres@127.0.0.1:$PG_LB_PORT/postgres?connect_timeout=3" -Atqc "select count(*) from pg_stat_replication where state = 'streaming'" 2>/dev/null) -ge 1 ]]; }

start_patroni() { # start_patroni NODE — as the postgres user, the pid file naming Patroni itself
  local node=$1 as=()
  patroni_config "$node"
  # setpriv execs (no forking wrapper): the pid is Patroni's own, for kill -9 by pid.
  [[ $(id -u) == 0 ]] && as=(setpriv --reuid=postgres --regid=postgres --init-groups)
  HOME=$STATE/$node setsid "${as[@]}" patroni "$STATE/$node/patroni.yml" >>"$STATE/logs/$node.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE/$node.pid"
}

up_patroni() {
  local node started=()
  for node in "${CLUSTER_PG_NODES[@]}"; do
    if pid_alive "$STATE/$node.pid"; then log "$node: reusing Patroni (pid $(cat "$STATE/$node.pid"))"; continue; fi
    # A Postgres whose Patroni was killed may run on: stopped first, so the new Patroni owns it.
    if [[ -f $STATE/$node/data/postmaster.pid ]]; then
      kill -9 "$(head -n 1 "$STATE/$node/data/postmaster.pid")" 2>/dev/null || true
    fi
    start_patroni "$node"
    started+=("$node")
    # The first node bootstraps the cluster alone (the second then copies it by pg_basebackup).
    [[ $node == pg-1 ]] && wait_for_process "$node (Patroni)" "$STATE/$node.pid" "$STATE/logs/$node.log" patroni_running "$node"
  done
  for node in "${started[@]}"; do
    wait_for_process "$node (Patroni)" "$STATE/$node.pid" "$STATE/logs/$node.log" patroni_running "$node"
    log "$node: started Patroni (pid $(cat "$STATE/$node.pid"))"
  done
}

# ---------------------------------------------------------------- HAProxy
haproxy_config() {
  local node s fe
  {
    cat <<CFG
# Written by scripts/stack-cluster.sh for the cluster profile.
global
  maxconn 2000
  log stdout format raw local0 warning
defaults
  mode tcp
  log global
  timeout connect 3s
  # Long polls (Temporal's are up to 70 s) and idle pool connections stay open.
  timeout client 30m
  timeout server 30m
  timeout check 2s
listen postgres
  bind 127.0.0.1:$PG_LB_PORT
  option httpchk
  http-check send meth GET uri /primary
  http-check expect status 200
  # Sessions to a node that stops being the leader are cut: clients reconnect to the new primary.
  default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
CFG
    for node in "${CLUSTER_PG_NODES[@]}"; do
      s=${node//-/_}; s=${s^^}
      echo "  server $node 127.0.0.1:$(port_of "${s}_PORT") check port $(port_of "${s}_REST_PORT")"
    done
    cat <<CFG
listen temporal-frontend
  bind 127.0.0.1:$TEMPORAL_LB_PORT
  balance roundrobin
  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
CFG
    for fe in frontend-1 frontend-2; do
      s=${fe//-/_}; s=${s^^}
      echo "  server $fe 127.0.0.1:$(port_of "T_${s}_GRPC") check"
    done
    cat <<CFG
listen stats
  mode http
  bind 127.0.0.1:$HAPROXY_STATS_PORT
  stats enable
  stats uri /stats
CFG
  } >"$STATE/haproxy.cfg.tmp"
  mv "$STATE/haproxy.cfg.tmp" "$STATE/haproxy.cfg"
}

haproxy_ready() { curl -sf "http://127.0.0.1:$HAPROXY_STATS_PORT/stats;csv" >/dev/null; }

up_haproxy() {
  haproxy_config
  haproxy -c -q -f "$STATE/haproxy.cfg" >&2 || die "the HAProxy config $STATE/haproxy.cfg is invalid"
  if pid_alive "$STATE/haproxy.pid" && haproxy_ready && cmp -s "$STATE/haproxy.cfg" "$STATE/haproxy.cfg.running"; then
    log "haproxy: reusing (pid $(cat "$STATE/haproxy.pid"))"
    return
  fi
  stop_pidfile "$STATE/haproxy.pid"
  setsid haproxy -db -f "$STATE/haproxy.cfg" >"$STATE/logs/haproxy.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE/haproxy.pid"
  cp "$STATE/haproxy.cfg" "$STATE/haproxy.cfg.running"
  wait_for_process haproxy "$STATE/haproxy.pid" "$STATE/logs/haproxy.log" haproxy_ready
  log "haproxy: started (pid $(cat "$STATE/haproxy.pid")): Postgres at 127.0.0.1:$PG_LB_PORT, Temporal at 127.0.0.1:$TEMPORAL_LB_PORT, stats http://127.0.0.1:$HAPROXY_STATS_PORT/stats"
}

# ---------------------------------------------------------------- Temporal services
cluster_temporal_sql() { # cluster_temporal_sql DB ARGS... — temporal-sql-tool through the Postgres endpoint
  local db=$1; shift
  "$TEMPORAL_SERVER_DIR/sql" --plugin postgres12 --ep 127.0.0.1 -p "$PG_LB_PORT" -u postgres --pw postgres --db "$db" "$@"
}

cluster_temporal_schemas() {
  local db dir url="postgres://postgres@127.0.0.1:$PG_LB_PORT"
  for db in temporal temporal_visibility; do
    dir=temporal; [[ $db == temporal_visibility ]] && dir=visibility
    if ! psql "$url/postgres" -Atqc "select 1 from pg_database where datname='$db'" | grep -q 1; then
      cluster_temporal_sql "$db" create-database >>"$STATE/logs/temporal-schema.log" 2>&1 || die "temporal-sql-tool could not create database $db"
    fi
    if ! psql "$url/$db" -Atqc "select 1 from pg_tables where tablename='schema_version'" | grep -q 1; then
      cluster_temporal_sql "$db" setup-schema -v 0.0 >>"$STATE/logs/temporal-schema.log" 2>&1 || die "temporal-sql-tool setup-schema failed on $db"
    fi
    cluster_temporal_sql "$db" update-schema -d "$TEMPORAL_SERVER_DIR/schema/postgresql/v12/$dir/versioned" >>"$STATE/logs/temporal-schema.log" 2>&1 \
      || die "temporal-sql-tool update-schema failed on $db (see $STATE/logs/temporal-schema.log)"
  done
}

temporal_service_ready() { # NAME — its gRPC port accepts and, for a frontend, the cluster answers SERVING through it
  local s=${1//-/_}; s=${s^^}
  case $1 in
    frontend-*) temporal_ready "127.0.0.1:$(port_of "T_${s}_GRPC")" ;;
    *) curl -sf -o /dev/null "http://127.0.0.1:$(port_of "T_${s}_METRICS")/metrics" ;;
  esac
}

start_temporal_service() { # NAME
  local name=$1 s service=${1%-[0-9]}
  s=${name//-/_}; s=${s^^}
  TEMPORAL_PG_PORT=$PG_LB_PORT TEMPORAL_DYNAMIC_CONFIG="$ROOT/scripts/prod/temporal-dynamicconfig.yaml" \
    TEMPORAL_PUBLIC_ADDRESS="127.0.0.1:$TEMPORAL_LB_PORT" TEMPORAL_PUBLIC_HTTP_PORT=$T_FRONTEND_1_HTTP \
    TEMPORAL_GRPC_PORT=$(port_of "T_${s}_GRPC") TEMPORAL_MEMBERSHIP_PORT=$(port_of "T_${s}_MEMBERSHIP") \
    TEMPORAL_HTTP_PORT=$(port_of "T_${s}_HTTP") TEMPORAL_METRICS_PORT=$(port_of "T_${s}_METRICS") \
    GOMAXPROCS=2 setsid "$TEMPORAL_SERVER_DIR/server" --config-file "$ROOT/scripts/cluster/temporal-server.yaml" --allow-no-auth \
    start --service "$service" >>"$STATE/logs/temporal-$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$STATE/temporal-$name.pid"
}

up_temporal_cluster() {
  local name started=() address="127.0.0.1:$TEMPORAL_LB_PORT"
  cluster_temporal_schemas
  # On a fresh database every service would insert the cluster's metadata row at start, and all but
  # one die of the duplicate key: the first starts alone until the row is there.
  local metadata_saved=''
  psql "postgres://postgres@127.0.0.1:$PG_LB_PORT/temporal" -Atqc 'select 1 from cluster_metadata_info limit 1' 2>/dev/null | grep -q 1 \
    && metadata_saved=1
  # History and matching first (the frontends route to them), the worker service last.
  for name in history-1 history-2 matching-1 matching-2 frontend-1 frontend-2 worker; do
    if pid_alive "$STATE/temporal-$name.pid" && temporal_service_ready "$name"; then
      log "temporal-$name: reusing (pid $(cat "$STATE/temporal-$name.pid"))"
      continue
    fi
    stop_pidfile "$STATE/temporal-$name.pid"
    start_temporal_service "$name"
    if [[ -z $metadata_saved ]]; then
      wait_for_process "temporal-$name" "$STATE/temporal-$name.pid" "$STATE/logs/temporal-$name.log" temporal_service_ready "$name"
      log "temporal-$name: started (pid $(cat "$STATE/temporal-$name.pid")), the cluster's metadata saved"
      metadata_saved=1
      continue
    fi
    started+=("$name")
  done
  for name in "${started[@]}"; do
    wait_for_process "temporal-$name" "$STATE/temporal-$name.pid" "$STATE/logs/temporal-$name.log" temporal_service_ready "$name"
    log "temporal-$name: started (pid $(cat "$STATE/temporal-$name.pid"))"
  done
  wait_for "Temporal through haproxy" temporal_ready "$address"
  if ! namespace_ready "$address"; then
    temporal operator namespace create --address "$address" --namespace default --retention 72h >/dev/null 2>&1 || true
    wait_for "namespace default" namespace_ready "$address"
  fi
  register_search_attributes "$address"
  wait_for "the search attributes to be usable" search_attributes_usable "$address"
  echo "export TEMPORAL_ADDRESS='$address'"
}

# ---------------------------------------------------------------- the workers' path to Temporal
delay_proxy_ready() { python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2).close()' "$1"; }

up_delay_proxy() { # the worker processes reach the frontends through it (scripts/cluster/faults.sh delay)
  [[ -f $STATE/worker-latency.port ]] || free_port >"$STATE/worker-latency.port"
  local port
  port=$(cat "$STATE/worker-latency.port")
  if pid_alive "$STATE/delay-proxy.pid" && delay_proxy_ready "$port"; then
    log "delay-proxy: reusing (pid $(cat "$STATE/delay-proxy.pid"), port $port)"
  else
    stop_pidfile "$STATE/delay-proxy.pid"
    setsid python3 "$ROOT/scripts/cluster/delay-proxy.py" "$port" "$TEMPORAL_LB_PORT" "$STATE/worker-latency-ms" \
      >"$STATE/logs/delay-proxy.log" 2>&1 </dev/null 9>&- &
    echo $! >"$STATE/delay-proxy.pid"
    wait_for_process delay-proxy "$STATE/delay-proxy.pid" "$STATE/logs/delay-proxy.log" delay_proxy_ready "$port"
    log "delay-proxy: started (pid $(cat "$STATE/delay-proxy.pid"), port $port)"
  fi
  WORKER_TEMPORAL_ADDRESS=127.0.0.1:$port
}

# ---------------------------------------------------------------- up / down
up_cluster_data() { # etcd, Patroni, HAProxy: prints DATABASE_URL (the stable endpoint)
  mkdir -p "$STATE/logs"
  cluster_ports
  up_etcd
  up_patroni
  up_haproxy
  wait_for "a writable Postgres primary behind haproxy" pg_lb_writable
  wait_for "the standby streaming from the primary" standby_streaming
  log "postgres: leader $(cluster_leader), through haproxy at 127.0.0.1:$PG_LB_PORT"
  local url="postgres://postgres@127.0.0.1:$PG_LB_PORT"
  psql "$url/postgres" -Atqc "select 1 from pg_database where datname='mediagen'" | grep -q 1 \
    || psql "$url/postgres" -qc 'create database mediagen' >/dev/null
  echo "export DATABASE_URL='$url/mediagen'"
}

cluster_where() { # every process of the profile: name, pid, port(s)
  local name s pid
  printf '[stack] %-18s %-8s %s\n' process pid where >&2
  row() { printf '[stack] %-18s %-8s %s\n' "$1" "$2" "$3" >&2; }
  row etcd "$(cat "$STATE/etcd.pid" 2>/dev/null)" "client 127.0.0.1:$ETCD_PORT"
  for name in "${CLUSTER_PG_NODES[@]}"; do
    s=${name//-/_}; s=${s^^}
    pid=$(head -n 1 "$STATE/$name/data/postmaster.pid" 2>/dev/null || true)
    row "$name" "$(cat "$STATE/$name.pid" 2>/dev/null)" "Patroni REST 127.0.0.1:$(port_of "${s}_REST_PORT"); postgres pid ${pid:-?} on 127.0.0.1:$(port_of "${s}_PORT")$([[ $(cluster_leader) == "$name" ]] && echo ' (leader)')"
  done
  row haproxy "$(cat "$STATE/haproxy.pid" 2>/dev/null)" "postgres 127.0.0.1:$PG_LB_PORT, temporal 127.0.0.1:$TEMPORAL_LB_PORT, stats 127.0.0.1:$HAPROXY_STATS_PORT"
  for name in "${CLUSTER_TEMPORAL_SERVICES[@]}"; do
    s=${name//-/_}; s=${s^^}
    row "temporal-$name" "$(cat "$STATE/temporal-$name.pid" 2>/dev/null)" "grpc 127.0.0.1:$(port_of "T_${s}_GRPC"), membership $(port_of "T_${s}_MEMBERSHIP"), metrics $(port_of "T_${s}_METRICS")"
  done
  row delay-proxy "$(cat "$STATE/delay-proxy.pid" 2>/dev/null)" "workers → temporal via 127.0.0.1:$(cat "$STATE/worker-latency.port" 2>/dev/null)"
  row minio "$(cat "$STATE/minio.pid" 2>/dev/null)" "127.0.0.1:$(cat "$STATE/minio.port" 2>/dev/null)"
  for name in "${PROD_GATEWAYS[@]}"; do row "$name" "$(cat "$STATE/$name.pid" 2>/dev/null)" "http://127.0.0.1:$(cat "$STATE/$name.port" 2>/dev/null)"; done
  for name in "${PROD_WORKERS[@]}"; do row "$name" "$(cat "$STATE/$name.pid" 2>/dev/null)" "roles ${PROD_ROLES[$name]}"; done
}

cluster_exports() { # the profile's own variables beside the parts' (for suites and fault tools)
  echo "export CLUSTER_PG_LB_PORT='$PG_LB_PORT'"
  echo "export CLUSTER_WORKER_TEMPORAL_ADDRESS='$WORKER_TEMPORAL_ADDRESS'"
  echo "export CLUSTER_ETCD_PORT='$ETCD_PORT'"
  echo "export CLUSTER_HAPROXY_STATS_URL='http://127.0.0.1:$HAPROXY_STATS_PORT/stats'"
  local node s
  for node in "${CLUSTER_PG_NODES[@]}"; do
    s=${node//-/_}; s=${s^^}
    echo "export CLUSTER_${s}_REST='http://127.0.0.1:$(port_of "${s}_REST_PORT")'"
  done
}

down_cluster() {
  [[ -f $STATE/cluster-ports.env ]] && cluster_ports
  stop_apps
  local name
  for name in worker frontend-1 frontend-2 matching-1 matching-2 history-1 history-2; do stop_pidfile "$STATE/temporal-$name.pid" & done
  wait
  stop_pidfile "$STATE/delay-proxy.pid"
  stop_pidfile "$STATE/haproxy.pid"
  # Patroni stops its Postgres on SIGTERM; a Postgres left behind by a killed Patroni goes too.
  for name in "${CLUSTER_PG_NODES[@]}"; do
    stop_pidfile "$STATE/$name.pid" 300
    if [[ -f $STATE/$name/data/postmaster.pid ]]; then
      as_postgres "$(pg_bin)/pg_ctl" -D "$STATE/$name/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
  done
  stop_pidfile "$STATE/etcd.pid"
  bash "$ROOT/scripts/cluster/faults.sh" heal-all >/dev/null 2>&1 || true
}
