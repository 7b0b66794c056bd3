#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of Terraform's pg backend and
# Nova's cross-runner run lock: initdb'd into DIR, listening on 127.0.0.1
# only, password authentication, fsync off (nothing in it outlives the
# test), run as a non-root user because postgres refuses to run as root.
#
#   .ci/postgres.sh start DIR [PORT]   # prints the connection URL on stdout
#   .ci/postgres.sh stop DIR
#
# PORT defaults to a free one. The server binaries come from $NOVA_PG_BIN,
# else initdb on PATH, else the newest /usr/lib/postgresql/*/bin (Debian's
# postgresql package; `.ci/tools.sh postgres` installs it). As root the
# cluster runs as $NOVA_PG_USER (default postgres, else nobody).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR [PORT] | stop DIR" >&2
  exit 2
}

pg_bin() {
  if [ -n "${NOVA_PG_BIN:-}" ]; then
    echo "$NOVA_PG_BIN"
    return
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return
  fi
  local newest
  newest="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  if [ -z "$newest" ]; then
    echo "no PostgreSQL server binaries (initdb, pg_ctl): run .ci/tools.sh postgres, or set NOVA_PG_BIN" >&2
    exit 1
  fi
  echo "$newest"
}

# as_owner runs a command as the cluster's (non-root) owner.
as_owner() {
  if [ "$(id -u)" -ne 0 ]; then
    "$@"
    return
  fi
  # runuser is in /usr/sbin, which a PATH set for a CI job can leave out.
  local ru
  if ! ru="$(PATH="$PATH:/usr/sbin:/sbin" command -v runuser)"; then
    echo "runuser (util-linux) is not installed: it starts the cluster as its non-root owner" >&2
    return 1
  fi
  "$ru" -u "$OWNER" -- "$@"
}

owner() {
  if [ "$(id -u)" -ne 0 ]; then
    id -un
  elif id "${NOVA_PG_USER:-postgres}" >/dev/null 2>&1; then
    echo "${NOVA_PG_USER:-postgres}"
  else
    echo nobody
  fi
}

# free_port picks a port nothing on loopback answers on. Another process
# may take it before postgres binds it; start then tries another.
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  echo "no free port on 127.0.0.1" >&2
  exit 1
}

start() {
  local dir="$1" port="${2:-}" bin pw
  bin="$(pg_bin)"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if [ -e "$dir/data" ]; then
    echo "$dir/data exists: stop and remove the old cluster first" >&2
    exit 1
  fi
  chmod 700 "$dir"
  [ "$(id -u)" -eq 0 ] && chown "$OWNER" "$dir"
  pw="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  # The password reaches initdb through a file only the owner reads, never
  # through a command line that ps would show.
  (umask 077 && printf '%s\n' "$pw" >"$dir/pwfile")
  [ "$(id -u)" -eq 0 ] && chown "$OWNER" "$dir/pwfile"
  if ! as_owner "$bin/initdb" -D "$dir/data" -U nova --auth=scram-sha-256 --pwfile="$dir/pwfile" \
    -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
    rm -f "$dir/pwfile"
    cat "$dir/initdb.log" >&2
    exit 1
  fi
  rm -f "$dir/pwfile"
  local tries=0 fixed="$port"
  while :; do
    tries=$((tries + 1))
    [ -z "$fixed" ] && port="$(free_port)"
    # -w: pg_ctl returns once the server accepts connections.
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 120 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir' -c fsync=off -c max_connections=200" \
      start >/dev/null; then
      break
    fi
    if [ -n "$fixed" ] || [ "$tries" -ge 3 ]; then
      tail -n 20 "$dir/postgres.log" >&2 || true
      exit 1
    fi
  done
  PGPASSWORD="$pw" "$bin/createdb" -h 127.0.0.1 -p "$port" -U nova nova
  local url="postgres://nova:$pw@127.0.0.1:$port/nova?sslmode=disable"
  (umask 077 && printf '%s\n' "$url" >"$dir/url")
  echo "$url"
}

stop() {
  local dir="$1" bin
  bin="$(pg_bin)"
  if [ ! -e "$dir/data/postmaster.pid" ]; then
    return
  fi
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
}

[ $# -ge 2 ] || usage
OWNER="$(owner)"
case "$1" in
  start) start "$2" "${3:-}" ;;
  stop) stop "$2" ;;
  *) usage ;;
esac
