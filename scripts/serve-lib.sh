# Sourced by the scripts that drive a throwaway `vitals serve` (fuzz-serve, client-test):
# starting it on a free loopback port with a fresh data directory, waiting for its
# address, and stopping it.

# start_serve NAME BINARY WORK: starts `BINARY serve` on 127.0.0.1:0 with its data in
# WORK/data and its log in WORK/server.log, with the caller's environment (secrets,
# limits: `VAR=value start_serve ...` passes them); once it accepts connections, sets
# `server_pid` and `address` (http://HOST:PORT). Exits naming NAME if the server stops
# or prints no address within 30 s.
start_serve() {
  local name=$1 binary=$2 work=$3
  # The address file exists before the server opens it: the loop below reads it at once.
  : >"$work/stdout"
  "$binary" serve --data-dir "$work/data" --listen 127.0.0.1:0 >"$work/stdout" 2>"$work/server.log" &
  server_pid=$!
  # The server prints `listening on http://ADDRESS` once it accepts connections.
  address=""
  for _ in $(seq 1 300); do
    address=$(sed -n 's|^listening on \(http://[^ ]*\).*|\1|p' "$work/stdout" | head -n 1)
    [[ -n "$address" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "$name: the server exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name: the server printed no address within 30 s" >&2
  exit 1
}

# stop_serve: stops the server start_serve started, if any, and waits for it.
stop_serve() {
  if [[ -n "${server_pid:-}" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
