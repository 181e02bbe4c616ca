#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks (issue 5, the sql verifier).
#
#   scripts/pg_tmp.sh start DIR [PORT]   initdb DIR/data, start the server, print its port on stdout
#   scripts/pg_tmp.sh stop DIR           stop the server (fast shutdown); DIR is left for the caller
#
# The server listens on 127.0.0.1 only, with trust authentication (it is reachable from this machine
# only and lives as long as the test session). initdb refuses to run as root, so as root the cluster
# belongs to the `postgres` OS user (Debian's package creates it). Binaries come from $PG_BIN, else the
# newest /usr/lib/postgresql/*/bin (Debian: apt-get install -y postgresql-15), else PATH.
set -euo pipefail

die() { echo "pg_tmp.sh: $*" >&2; exit 2; }

find_bin() {
    if [[ -n "${PG_BIN:-}" ]]; then echo "$PG_BIN"; return; fi
    local newest
    newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [[ -n "$newest" && -x "$newest/initdb" ]]; then echo "$newest"; return; fi
    if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
    die "PostgreSQL server binaries not found (no initdb); install them: apt-get install -y postgresql-15"
}

as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' OS user (apt-get install -y postgresql-15 creates it)"
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd=${1:-}; dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || die "usage: pg_tmp.sh start|stop DIR [PORT]"
bin=$(find_bin)

case "$cmd" in
start)
    port=${3:-$(free_port)}
    mkdir -p "$dir"
    [[ $(id -u) -eq 0 ]] && chown postgres "$dir" && chmod 700 "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
        start >/dev/null || { cat "$dir/server.log" >&2; die "pg_ctl start failed"; }
    echo "$port"
    ;;
stop)
    [[ -d "$dir/data" ]] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null  # throwaway: no checkpoint
    ;;
*)
    die "unknown command $cmd (start|stop)"
    ;;
esac
