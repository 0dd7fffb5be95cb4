#!/usr/bin/env bash
# Local AWS wire-protocol emulator for tests (DynamoDB, DynamoDB Streams, Kinesis, ...).
#
#   scripts/emulator.sh start [ministack|ministack-iam|moto]   # prints ONLY the endpoint URL on stdout
#   scripts/emulator.sh stop  [ministack|ministack-iam|moto]
#   scripts/emulator.sh status [ministack|ministack-iam|moto]  # prints the URL if running, exit 1 if not
#
# Installs the pinned emulator from PyPI into a project-local venv
# (.emulator/venv-<package>), runs it on a free loopback port, logs to
# .emulator/<name>.log, pid in .emulator/<name>.pid, URL in .emulator/<name>.url.
#
# ministack-iam is a second ministack instance (same pinned package and venv as
# ministack) that enforces IAM (AUTH=true): the Lambda functions it runs call it with
# their execution role's credentials and are held to the role's policies, while the
# `test` access key stays root. It also sets VITALS_AWS_CALL_LOG=1, which reaches every
# function it runs, so each one logs its AWS calls (target vitals::aws_call) for
# scripts/iam_check.py. scripts/stack-test runs the stack on it.
# Nothing is downloaded from anywhere but PyPI (via pip). All diagnostics go to stderr.
#
# Env knobs: EMULATOR_PYTHON (default python3), EMULATOR_START_TIMEOUT (default 60 s).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE_DIR="$ROOT/.emulator"
PYTHON="${EMULATOR_PYTHON:-python3}"
START_TIMEOUT="${EMULATOR_START_TIMEOUT:-60}"

MINISTACK_REQ="ministack==1.5.33"
MOTO_REQ="moto[server]==5.2.5"

log() { printf 'emulator: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  cat >&2 <<'EOF'
usage: scripts/emulator.sh start|stop|status [ministack|ministack-iam|moto]
  start   install (if needed) and start the emulator; prints the endpoint URL on stdout
  stop    stop the emulator (and its children) started by 'start'
  status  print the endpoint URL if the emulator is running (exit 1 otherwise)
EOF
  exit 2
}

cmd="${1:-}"
name="${2:-ministack}"
[[ -n "$cmd" ]] || usage
case "$name" in
  ministack|ministack-iam) req="$MINISTACK_REQ"; dist="ministack"; version="${MINISTACK_REQ#*==}" ;;
  moto)      req="$MOTO_REQ";      dist="moto";      version="${MOTO_REQ#*==}" ;;
  *) log "unknown emulator '$name'"; usage ;;
esac

# The two ministack instances share one venv (the same pinned package).
venv="$STATE_DIR/venv-$dist"
pid_file="$STATE_DIR/$name.pid"
url_file="$STATE_DIR/$name.url"
log_file="$STATE_DIR/$name.log"
lock_file="$STATE_DIR/$name.lock"

# Dummy credentials/region for the emulator process (never real ones).
emu_env=(
  AWS_ACCESS_KEY_ID=test
  AWS_SECRET_ACCESS_KEY=test
  AWS_DEFAULT_REGION=us-east-1
  AWS_REGION=us-east-1
  PYTHONUNBUFFERED=1
  EMULATOR_INSTANCE="$name"   # lets is_running tell the instances of one venv apart
)

alive() { kill -0 "$1" 2>/dev/null; }

# True if the pid is alive AND is one of ours (its command line runs from our venv, and
# its EMULATOR_INSTANCE, when it has one, is this name), so a stale pid file whose pid
# was reused never makes us signal a stranger or the other instance of the same venv.
# (Instances started before EMULATOR_INSTANCE existed have none; only ministack can be one.)
is_running() { # pid
  [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null || return 1
  if [[ -r "/proc/$1/cmdline" ]]; then
    tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "$venv/" || return 1
  fi
  if [[ -r "/proc/$1/environ" ]]; then
    local instance
    instance="$(tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^EMULATOR_INSTANCE=//p' || true)"
    if [[ -n "$instance" ]]; then
      [[ "$instance" == "$name" ]] || return 1
    else
      [[ "$name" != ministack-iam ]] || return 1
    fi
  fi
}

read_pid() {
  [[ -f "$pid_file" ]] && tr -dc '0-9' <"$pid_file" || true
}

# Exit 0 if something answers HTTP (any status code) at the URL.
http_ok() { # url
  "$PYTHON" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2).read(64)
except urllib.error.HTTPError:
    pass  # an HTTP error status still means the server is answering
except Exception:
    sys.exit(1)
PY
}

free_port() {
  "$PYTHON" -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

health_path() {
  case "$name" in
    ministack|ministack-iam) echo "/_ministack/health" ;;
    moto)      echo "/moto-api/" ;;
  esac
}

ensure_venv() {
  local have=""
  # Both ministack instances install into the same venv: one install at a time.
  if command -v flock >/dev/null 2>&1; then
    exec 8>"$venv.lock"
    flock -w 600 8 || die "timed out waiting for $venv.lock"
  fi
  if [[ -x "$venv/bin/python" ]]; then
    have="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$dist'))" 2>/dev/null || true)"
  fi
  if [[ "$have" == "$version" && -f "$venv/.emulator-req" && "$(cat "$venv/.emulator-req")" == "$req" ]]; then
    return 0
  fi
  if [[ ! -x "$venv/bin/python" ]]; then
    log "creating venv $venv"
    "$PYTHON" -m venv "$venv" >&2
  fi
  log "installing $req into $venv (from PyPI)"
  rm -f "$venv/.emulator-req"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$req" >&2
  have="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$dist'))")"
  [[ "$have" == "$version" ]] || die "installed $dist $have, expected $version"
  printf '%s\n' "$req" >"$venv/.emulator-req"
}

stop_pid() { # pid
  local pid="$1" pgid deadline
  is_running "$pid" || return 0
  pgid="$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ' || true)"
  log "stopping $name (pid $pid)"
  if [[ -n "$pgid" && "$pgid" == "$pid" ]]; then
    # started by us as a session/group leader: signal the whole group (children too)
    kill -TERM -- "-$pid" 2>/dev/null || true
  else
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  fi
  deadline=$((SECONDS + 15))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
  if alive "$pid"; then
    log "pid $pid did not exit after SIGTERM; sending SIGKILL"
    if [[ -n "$pgid" && "$pgid" == "$pid" ]]; then
      kill -KILL -- "-$pid" 2>/dev/null || true
    else
      pkill -KILL -P "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  # sweep any leftover group members (e.g. children that outlived the leader)
  if [[ -n "$pgid" && "$pgid" == "$pid" ]]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
}

do_start() {
  local pid url port deadline
  pid="$(read_pid)"
  if is_running "$pid" && [[ -f "$url_file" ]]; then
    url="$(cat "$url_file")"
    if http_ok "$url$(health_path)"; then
      log "$name already running (pid $pid) at $url"
      printf '%s\n' "$url"
      return 0
    fi
    stop_pid "$pid"
  fi
  rm -f "$pid_file" "$url_file"

  ensure_venv

  port="$(free_port)"
  url="http://127.0.0.1:$port"
  local -a run_env=("${emu_env[@]}") run_cmd
  case "$name" in
    ministack|ministack-iam)
      # AWS_ENDPOINT_URL: ministack hands it to the Lambda functions it runs as local
      # processes, so a deployed stack's functions (scripts/stack-test) call this emulator.
      run_env+=(BIND_HOST=127.0.0.1 GATEWAY_PORT="$port" IOT_MTLS_ENABLED=0 SFTP_ENABLED=0
                MINISTACK_REGION=us-east-1 PERSIST_STATE=0 AWS_ENDPOINT_URL="$url")
      if [[ "$name" == ministack-iam ]]; then
        # IAM enforced; every function it runs logs its AWS calls (its environment
        # reaches the functions' processes).
        run_env+=(AUTH=true VITALS_AWS_CALL_LOG=1)
      fi
      run_cmd=("$venv/bin/ministack")
      ;;
    moto)
      run_cmd=("$venv/bin/moto_server" -H 127.0.0.1 -p "$port")
      ;;
  esac
  [[ -x "${run_cmd[0]}" ]] || die "entrypoint ${run_cmd[0]} not found in venv"

  log "starting $name on $url (log: $log_file)"
  : >"$log_file"
  # New session => its own process group, so 'stop' can kill it with its children.
  local launcher=()
  command -v setsid >/dev/null 2>&1 && launcher=(setsid)
  (cd "$STATE_DIR" && exec "${launcher[@]}" env -u AWS_PROFILE -u AWS_SESSION_TOKEN "${run_env[@]}" "${run_cmd[@]}" \
      >>"$log_file" 2>&1 </dev/null 8>&- 9>&-) &
  pid=$!
  printf '%s\n' "$pid" >"$pid_file"

  deadline=$((SECONDS + START_TIMEOUT))
  until http_ok "$url$(health_path)"; do
    if ! alive "$pid"; then
      log "$name exited before answering on $url; last log lines:"
      tail -n 40 "$log_file" >&2 || true
      rm -f "$pid_file"
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      log "$name did not answer on $url within ${START_TIMEOUT}s; last log lines:"
      tail -n 40 "$log_file" >&2 || true
      stop_pid "$pid"
      rm -f "$pid_file"
      exit 1
    fi
    sleep 0.25
  done
  printf '%s\n' "$url" >"$url_file"
  log "$name ready (pid $pid)"
  printf '%s\n' "$url"
}

do_stop() {
  local pid port
  pid="$(read_pid)"
  # The port it answered on names the directory ministack unpacks its Lambda functions'
  # code into (about 100 MB a stack run, never removed by ministack itself).
  port="$(sed -n 's|.*:\([0-9][0-9]*\)/*$|\1|p' "$url_file" 2>/dev/null || true)"
  if is_running "$pid"; then
    stop_pid "$pid"
  else
    log "$name not running"
  fi
  rm -f "$pid_file" "$url_file"
  if [[ -n "$port" ]]; then
    rm -rf "${TMPDIR:-/tmp}/ministack-provided-code-$port"
  fi
}

do_status() {
  local pid
  pid="$(read_pid)"
  if is_running "$pid" && [[ -f "$url_file" ]]; then
    cat "$url_file"
  else
    log "$name not running"
    return 1
  fi
}

mkdir -p "$STATE_DIR"

# Serialise start/stop of the same emulator (e.g. parallel test runners).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$lock_file"
  flock -w "$((START_TIMEOUT + 30))" 9 || die "timed out waiting for $lock_file"
fi

case "$cmd" in
  start)  do_start ;;
  stop)   do_stop ;;
  status) do_status ;;
  *) usage ;;
esac
