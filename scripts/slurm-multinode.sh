#!/usr/bin/env bash
# A real multi-node Slurm cluster on this one machine, for tests/runners/test_slurm_multinode.py and for
# trying `reproduce.py run --runner slurm` over several nodes by hand. Idempotent: run it as often as
# you like (it also brings back a node a test killed).
#
#   SLURM_CONF=/etc/slurm-multinode/slurm.conf reproduce.py run --suite smoke --runner slurm
#
# Three nodes, each slurmd in its own network and UTS namespace (`ip netns add`, nsenter, `unshare --uts`): its
# own hostname (rknode1..3) and address on a private test subnet (10.223.23.0/24) that only these
# namespaces and the bridge rkslurm0 in the root namespace (10.223.23.1, where slurmctld listens)
# use; no route leaves the subnet, nothing is forwarded. The file system is shared, as a cluster's
# shared file system would be (the kit, the results directory, munge's socket). The nodes' CPUs
# differ, so their fingerprints and CPU peaks differ:
#
#   rknode1  10.223.23.11  CPU 0      (slurmd under `taskset -c 0`: 1 usable core)
#   rknode2  10.223.23.12  CPU 1      (1 usable core)
#   rknode3  10.223.23.13  CPUs 0-1   (2 usable cores)
#
# Each node's features are `cpu` and its name: `--slurm-constraint rknode3` keeps a run on one node
# (scripts/bench_slurm.py --multinode compares one node with three that way).
#
# One slurmctld (its own port 6917, state, logs and ClusterName, beside scripts/slurm-setup.sh's
# one-node cluster, which keeps running for tests/runners/test_slurm.py); munge is shared with it
# (scripts/slurm-setup.sh starts munged: this script runs it first). Commands reach this cluster
# with SLURM_CONF=/etc/slurm-multinode/slurm.conf; jobs inherit it (sbatch --export=ALL).
#
# A node is "killed" by killing every process of its network namespace
# (`ip netns pids rknodeN | xargs kill -9`: its slurmd, slurmstepd and the cells): slurmctld marks
# it DOWN after SlurmdTimeout (10 s) and its jobs end NODE_FAIL. Running this script again starts its
# slurmd again (ReturnToService=2 returns it to service when it registers; the script resumes it too).
#
# No cgroups (as the one-node cluster: proctrack/linuxproc, task/none); the CPU sets are the
# affinity slurmd and every process it starts inherit. `--mem` is a scheduling request only. Each
# node is given the machine's memory (`slurmd -C`): they share it. Needs root.
#
#   bash scripts/slurm-multinode.sh          start (or repair) the cluster, wait until all nodes idle
#   bash scripts/slurm-multinode.sh --kill N kill node N's namespace processes (tests use this)
#   bash scripts/slurm-multinode.sh --stop   stop the cluster, remove the namespaces and the bridge
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pidfile.sh
. "$HERE/pidfile.sh"
CONF_DIR=/etc/slurm-multinode
CONF=$CONF_DIR/slurm.conf
LOG_DIR=/var/log/slurm-multinode
STATE=/var/lib/slurm-multinode
RUN_DIR=/run/slurm-multinode
BRIDGE=rkslurm0
NET=10.223.23
CTL_ADDR=$NET.1
CTL_PORT=6917
SLURMD_PORT=6918
NODES=(rknode1 rknode2 rknode3)
ADDRS=($NET.11 $NET.12 $NET.13)
CPUSETS=(0 1 0-1)
NCPUS=(1 1 2)
export SLURM_CONF=$CONF

say() { echo "slurm-multinode: $*"; }

node_ns_pids() { ip netns pids "$1" 2>/dev/null || true; }

kill_node() {  # every process of the node's namespace: slurmd, slurmstepd, the cells
  local ns=$1 pids
  pids=$(node_ns_pids "$ns")
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
  fi
  for _ in $(seq 50); do [ -z "$(node_ns_pids "$ns")" ] && return 0; sleep 0.1; done
  say "processes of $ns still alive: $(node_ns_pids "$ns" | tr '\n' ' ')" >&2
  return 1
}

ctl_running() { pidfile_pid $RUN_DIR/slurmctld.pid slurmctld >/dev/null; }

case "${1:-}" in
  --kill)
    n=${2:?usage: slurm-multinode.sh --kill N (1-3) or NODENAME}
    case "$n" in rknode*) ns=$n ;; *) ns=rknode$n ;; esac
    say "killing every process of $ns"
    kill_node "$ns"
    exit 0 ;;
  --stop)
    for ns in "${NODES[@]}"; do kill_node "$ns" || true; ip netns del "$ns" 2>/dev/null || true; done
    pidfile_stop $RUN_DIR/slurmctld.pid slurmctld
    ip link del $BRIDGE 2>/dev/null || true
    say "stopped"
    exit 0 ;;
  "") ;;
  *) echo "usage: slurm-multinode.sh [--kill N | --stop]" >&2; exit 2 ;;
esac

# -- 1. packages and munge: the one-node setup script does both (idempotent) ----------------------
if ! command -v slurmctld >/dev/null || ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  bash "$HERE/slurm-setup.sh"
fi
command -v ip >/dev/null || { apt-get update -qq; apt-get install -y -qq iproute2 >/dev/null; }
command -v unshare >/dev/null && command -v taskset >/dev/null

has_addr() {  # NS DEV ADDR: DEV (in namespace NS, "" for the root one) has ADDR/24
  local out
  out=$(ip ${1:+-n "$1"} -o addr show dev "$2" 2>/dev/null || true)
  [[ "$out" == *"inet $3/24 "* ]]
}

# -- 2. the private network: a bridge in the root namespace, one namespace per node ---------------
if ! ip link show $BRIDGE >/dev/null 2>&1; then
  say "bridge $BRIDGE ($CTL_ADDR/24)"
  ip link add $BRIDGE type bridge
fi
has_addr "" $BRIDGE $CTL_ADDR || ip addr add $CTL_ADDR/24 dev $BRIDGE
# IPv4 only: no IPv6 link-local chatter on the test subnet
sysctl -q -w "net.ipv6.conf.$BRIDGE.disable_ipv6=1" 2>/dev/null || true
ip link set $BRIDGE up
for i in "${!NODES[@]}"; do
  ns=${NODES[$i]} addr=${ADDRS[$i]} host=rkveth$((i + 1))
  # a name left behind without its namespace mounted on it (a restored /run) is made again
  if [ -e "/run/netns/$ns" ] && ! mountpoint -q "/run/netns/$ns"; then
    say "namespace $ns: stale name, made again"
    ip netns del "$ns" 2>/dev/null || rm -f "/run/netns/$ns"
  fi
  if [ ! -e "/run/netns/$ns" ]; then
    say "namespace $ns ($addr)"
    ip netns add "$ns"
  fi
  if ! ip link show "$host" >/dev/null 2>&1; then
    ip link add "$host" type veth peer name eth0 netns "$ns"
  fi
  ip link set "$host" master $BRIDGE up
  ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
  sysctl -q -w "net.ipv6.conf.$host.disable_ipv6=1" 2>/dev/null || true
  ip -n "$ns" link set lo up
  has_addr "$ns" eth0 "$addr" || ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
done

# -- 3. slurm.conf -------------------------------------------------------------------------------
HOST=$(hostname -s)
MEM=$(slurmd -C | head -1 | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
mkdir -p "$CONF_DIR" "$LOG_DIR" "$STATE/slurmctld" "$RUN_DIR"
NEW=$(mktemp)
{
cat <<EOF
# Written by reprokit scripts/slurm-multinode.sh: a three-node test cluster on one machine, each
# slurmd in its own network and UTS namespace. Do not edit.
ClusterName=reprokit-multinode
SlurmctldHost=$HOST($CTL_ADDR)
SlurmctldPort=$CTL_PORT
SlurmdPort=$SLURMD_PORT
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
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.%n.pid
SlurmdSpoolDir=$STATE/slurmd.%n
StateSaveLocation=$STATE/slurmctld
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.%n.log
MinJobAge=86400
KillWait=5
# a node whose slurmd stops answering is DOWN (its jobs NODE_FAIL) after 10 s; back when it registers
SlurmdTimeout=10
ReturnToService=2
SchedulerParameters=sched_interval=2
EOF
for i in "${!NODES[@]}"; do
  echo "NodeName=${NODES[$i]} NodeAddr=${ADDRS[$i]} NodeHostname=${NODES[$i]} CPUs=${NCPUS[$i]} Boards=1 SocketsPerBoard=1 CoresPerSocket=${NCPUS[$i]} ThreadsPerCore=1 RealMemory=$MEM Feature=cpu,${NODES[$i]} State=UNKNOWN"
done
echo "PartitionName=multi Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP"
} >"$NEW"
RESTART=0
if [ ! -f "$CONF" ] || ! cmp -s "$NEW" "$CONF"; then
  say "writing $CONF"
  install -m 0644 "$NEW" "$CONF"
  RESTART=1
fi
rm -f "$NEW"

# -- 4. daemons ----------------------------------------------------------------------------------
slurmd_running() {  # a slurmd among the processes of the node's network namespace
  local p
  for p in $(node_ns_pids "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = slurmd ] && return 0
  done
  return 1
}
if [ "$RESTART" = 1 ]; then
  for ns in "${NODES[@]}"; do kill_node "$ns" || true; done
  pidfile_stop $RUN_DIR/slurmctld.pid slurmctld
fi
if ! ctl_running; then
  say "starting slurmctld ($CTL_ADDR:$CTL_PORT)"
  slurmctld -i -f "$CONF"
fi
for i in "${!NODES[@]}"; do
  ns=${NODES[$i]}
  if ! slurmd_running "$ns"; then
    say "starting slurmd $ns (CPUs ${CPUSETS[$i]})"
    mkdir -p "$STATE/slurmd.$ns"
    # own network namespace (nsenter: `ip netns exec` would also remount /sys, hiding the cgroup
    # file system slurmd wants), own UTS namespace and hostname, its CPU set; slurmd detaches
    # itself and stays in all three
    nsenter --net="/run/netns/$ns" unshare --uts -- sh -c \
      "hostname $ns && exec taskset -c ${CPUSETS[$i]} slurmd -f $CONF -N $ns"
  fi
done

# -- 5. wait until every node is idle (90 s at most; each query bounded, as a controller that is not
#        there makes sinfo retry for its MessageTimeout) ------------------------------------------
state() { timeout 5 sinfo -h -N -n "$1" -o '%T' 2>/dev/null | head -1 || true; }
deadline=$((SECONDS + 90))
while [ "$SECONDS" -lt "$deadline" ]; do
  up=0
  for ns in "${NODES[@]}"; do
    s=$(state "$ns")
    case "$s" in
      idle|mixed|allocated) up=$((up + 1)) ;;
      down*|drain*|drained*|fail*) timeout 5 scontrol update nodename="$ns" state=resume >/dev/null 2>&1 || true ;;
    esac
  done
  [ "$up" = "${#NODES[@]}" ] && break
  sleep 0.5
done
bad=0
for ns in "${NODES[@]}"; do
  s=$(state "$ns")
  case "$s" in
    idle|mixed|allocated) ;;
    *) say "node $ns did not come up (state: ${s:-none}); see $LOG_DIR/slurmctld.log and slurmd.$ns.log" >&2
       bad=1 ;;
  esac
done
if [ "$bad" = 1 ]; then
  for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR"/slurmd.rknode*.log; do
    echo "--- last lines of $f" >&2; tail -n 10 "$f" >&2 2>/dev/null || true
  done
  exit 1
fi
say "up: $(sinfo -h -N -o '%N %T %c CPUs' | tr '\n' ';' | sed 's/;$//') (SLURM_CONF=$CONF)"
