#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for the Slurm tests (tests/test_slurm*.py) and for
# trying `reproduce.py run --runner slurm` by hand. Idempotent: run it as often as you like.
#
#   1. apt: slurm-wlm and munge, when missing
#   2. munge: a key (when none), /run/munge, munged (when `munge -n | unmunge` fails)
#   3. /etc/slurm/slurm.conf for THIS host, its CPUs and memory from `slurmd -C` (rewritten only
#      when it changes; the daemons are restarted then)
#   4. slurmctld and slurmd in the background (when not running), logs in /var/log/slurm/
#   5. waits until `sinfo` shows the node idle (resumes it when a test left it DOWN or DRAINED)
#
# No cgroups: reference/platform.md's one-node recipe (proctrack/linuxproc, task/none), which is
# what works on the project's machines (a gVisor sandbox). So `--mem` is a scheduling request only
# here: nothing enforces it (OUT_OF_MEMORY cannot happen on this cluster).
# No slurmdbd: `sacct` answers "accounting storage is disabled"; completed jobs stay in
# `squeue --states=all` / `scontrol show job` for MinJobAge (1 day here), which is what the kit
# follows when sacct has nothing.
# Needs root (CI and the development machines run as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=pidfile.sh
. "$(dirname "$0")/pidfile.sh"

CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
LOG_DIR=/var/log/slurm
STATE=/var/lib/slurm

say() { echo "slurm-setup: $*"; }

# -- 1. packages ----------------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null \
   || ! command -v munged >/dev/null; then
  say "apt-get install slurm-wlm munge"
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge >/dev/null
fi

# -- 2. munge -------------------------------------------------------------------------------------
if [ ! -s /etc/munge/munge.key ]; then
  say "making a munge key"
  mkdir -p /etc/munge
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
chmod 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "starting munged"
  pidfile_stop /run/munge/munged.pid munged
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null
fi

# -- 3. slurm.conf for this host ------------------------------------------------------------------
HOST=$(hostname -s)
# `slurmd -C` prints this machine's real layout: NodeName=... CPUs=... RealMemory=...
HW=$(slurmd -C | head -1 | sed -e 's/^NodeName=[^ ]* //')
mkdir -p "$CONF_DIR" "$LOG_DIR" "$STATE/slurmctld" "$STATE/slurmd"
NEW=$(mktemp)
cat >"$NEW" <<EOF
# Written by reprokit scripts/slurm-setup.sh for host $HOST: a one-node test cluster. Do not edit.
ClusterName=reprokit
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG_DIR/jobcomp.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=$STATE/slurmd
StateSaveLocation=$STATE/slurmctld
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# completed jobs stay visible to squeue/scontrol for a day (there is no slurmdbd for sacct)
MinJobAge=86400
# a job over its time limit gets SIGTERM, then SIGKILL 5 s later
KillWait=5
ReturnToService=2
SchedulerParameters=sched_interval=2
NodeName=$HOST NodeAddr=127.0.0.1 $HW Feature=cpu State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
RESTART=0
if [ ! -f "$CONF" ] || ! cmp -s "$NEW" "$CONF"; then
  say "writing $CONF ($HOST: $HW)"
  install -m 0644 "$NEW" "$CONF"
  RESTART=1
fi
rm -f "$NEW"

# -- 4. daemons -----------------------------------------------------------------------------------
if [ "$RESTART" = 1 ]; then
  pidfile_stop /run/slurmd.pid slurmd
  pidfile_stop /run/slurmctld.pid slurmctld
fi
if ! pidfile_pid /run/slurmctld.pid slurmctld >/dev/null; then
  say "starting slurmctld"
  # -i: ignore state saved by an older configuration; daemons detach themselves
  slurmctld -i
fi
if ! pidfile_pid /run/slurmd.pid slurmd >/dev/null; then
  say "starting slurmd"
  slurmd
fi

# -- 5. wait for the node (90 s at most; each query bounded, as a controller that is not there makes
#        sinfo retry for its MessageTimeout) -------------------------------------------------------
state() { timeout 5 sinfo -h -N -n "$HOST" -o '%T' 2>/dev/null | head -1 || true; }
deadline=$((SECONDS + 90))
while [ "$SECONDS" -lt "$deadline" ]; do
  s=$(state)
  case "$s" in
    idle|mixed|allocated) break ;;
    down*|drain*|drained*|fail*)
      say "node $HOST is $s: resuming it"
      timeout 5 scontrol update nodename="$HOST" state=resume || true ;;
  esac
  sleep 0.5
done
s=$(state)
case "$s" in
  idle|mixed|allocated) say "node $HOST is $s: $(sinfo -h -o '%P %D %c CPUs %m MB' | head -1)" ;;
  *) say "node $HOST did not come up (state: ${s:-none}); see $LOG_DIR/slurmctld.log and slurmd.log" >&2
     for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log"; do
       echo "--- last lines of $f" >&2; tail -n 15 "$f" >&2 2>/dev/null || true
     done
     exit 1 ;;
esac
