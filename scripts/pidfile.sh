# Sourced by scripts/slurm-setup.sh and scripts/slurm-multinode.sh: a daemon's pid file read safely.
#
# A pid file can outlive its daemon (a machine restored from a snapshot keeps /run, which is not a
# tmpfs here), and its number can by then belong to another process. So a pid file counts only when
# the process it names is alive *and* is the daemon named: otherwise the daemon would never be
# started again (its controller unreachable, every node "state: none"), or an unrelated process
# would be killed in its place.
#
#   pidfile_pid FILE NAME    print the pid when FILE names a live process whose command is NAME
#   pidfile_stop FILE NAME   stop that process (SIGTERM, up to 5 s), remove FILE

pidfile_pid() {
  local file=$1 name=$2 pid
  [ -f "$file" ] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
  echo "$pid"
}

pidfile_stop() {
  local file=$1 name=$2 pid
  if pid=$(pidfile_pid "$file" "$name"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  fi
  rm -f "$file"
}
