#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages, for knobs' Slurm backend
# (its tests, and trying `knobs measure --backend slurm` without a real cluster).
#
#   scripts/slurm-local.sh start    # installs munge, slurmctld, slurmd, slurm-client if missing,
#                                   # configures one node with this machine's cores and memory,
#                                   # starts the daemons and waits until the node is idle
#   scripts/slurm-local.sh status   # the daemons and `sinfo`
#   scripts/slurm-local.sh stop     # stops the daemons this script started
#
# Idempotent: `start` on a running cluster only checks it. The daemons are started directly
# (containers have no systemd); process tracking is `linuxproc` and there is no cgroup plugin,
# so it runs where cgroups are read-only. Must run as root (it installs packages and starts
# daemons). State and logs: /var/lib/knobs-slurm, /var/log/knobs-slurm.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
STATE=/var/lib/knobs-slurm
LOGS=/var/log/knobs-slurm
RUN=/run/knobs-slurm
# `start` waits this long (seconds) for the node to come up.
WAIT=${KNOBS_SLURM_WAIT:-60}

die() {
  echo "slurm-local: $*" >&2
  exit 1
}

running() { # pidfile
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
  local missing=()
  command -v munged >/dev/null || missing+=(munge)
  command -v slurmctld >/dev/null || missing+=(slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v sbatch >/dev/null || missing+=(slurm-client)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "slurm-local: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
      { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; } ||
      die "could not install ${missing[*]} with apt-get"
  fi
}

write_config() {
  mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d" "$LOGS" "$RUN"
  # slurmd -C prints this machine as a NodeName line: CPUs, sockets, cores, threads, memory.
  local node
  node=$(slurmd -C | grep '^NodeName=' | sed 's/ UpTime=.*//')
  [ -n "$node" ] || die "slurmd -C did not describe this machine"
  local host
  host=$(hostname)
  cat >"$CONF.tmp" <<EOF
# Written by knobs' scripts/slurm-local.sh: a one-node cluster for testing.
ClusterName=knobs-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
# No cgroups: containers often cannot write them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=30
MpiDefault=none
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    return
  fi
  [ -f /etc/munge/munge.key ] || {
    if command -v mungekey >/dev/null; then mungekey --create --keyfile /etc/munge/munge.key; else
      dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    fi
  }
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
  chmod 0400 /etc/munge/munge.key
  chmod 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "munged did not start (see /var/log/munge/munged.log)"
}

node_state() {
  sinfo -h -N -o '%T' 2>/dev/null | head -n 1
}

start() {
  [ "$(id -u)" = 0 ] || die "must run as root (installs packages, starts daemons)"
  install_packages
  if running "$RUN/slurmctld.pid" && running "$RUN/slurmd.pid" && [ "$(node_state)" = idle ]; then
    echo "slurm-local: running; node $(hostname) is idle"
    return
  fi
  [ -f "$CONF" ] && ! grep -q "knobs' scripts/slurm-local.sh" "$CONF" &&
    die "$CONF exists and is not ours; not overwriting it"
  write_config
  start_munge
  running "$RUN/slurmctld.pid" || slurmctld
  running "$RUN/slurmd.pid" || slurmd
  local state=""
  for _ in $(seq $((WAIT * 2))); do
    state=$(node_state)
    case "$state" in
    idle | mixed | allocated) break ;;
    down* | drain* | unknown* | "") scontrol update NodeName="$(hostname)" State=RESUME 2>/dev/null || true ;;
    esac
    sleep 0.5
  done
  [ "$state" = idle ] || [ "$state" = mixed ] || [ "$state" = allocated ] ||
    die "node not up after ${WAIT} s (state: ${state:-none}); see $LOGS"
  echo "slurm-local: running; node $(hostname) is $state"
  sinfo
}

stop() {
  local pidfile
  for pidfile in "$RUN/slurmd.pid" "$RUN/slurmctld.pid"; do
    if running "$pidfile"; then
      kill "$(cat "$pidfile")"
      for _ in $(seq 50); do running "$pidfile" || break; sleep 0.1; done
    fi
  done
  echo "slurm-local: stopped slurmctld and slurmd (munged keeps running)"
}

status() {
  local d
  for d in slurmctld slurmd; do
    if running "$RUN/$d.pid"; then echo "$d: running (pid $(cat "$RUN/$d.pid"))"; else echo "$d: stopped"; fi
  done
  sinfo 2>/dev/null || true
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
