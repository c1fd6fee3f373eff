#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for testing deploy/slurm/ end to end:
#   bash scripts/slurm_local.sh start    install (apt) if needed, configure, start, wait until idle
#   bash scripts/slurm_local.sh status   the daemons and `sinfo`
#   bash scripts/slurm_local.sh stop     stop what `start` started
#
# It runs munged, slurmctld and slurmd directly as daemons (no systemd needed: it works in a
# container), as root, with no cgroups (proctrack/linuxproc, task/none) and no accounting.
# The node is this machine (`hostname -s`, reached on 127.0.0.1) with `nproc` CPUs; one
# partition, `debug`, is the default. Jobs are scheduled per core, so several run at once.
#
# Files: the config is /etc/slurm/slurm.conf (where sbatch, sinfo and squeue look without any
# environment variable), marked as written here; a slurm.conf without that mark belongs to a
# real cluster and is never replaced. State, spool, logs and pid files are in
# $RAVE_SLURM_DIR (default /var/lib/rave-slurm). The munge key is /etc/munge/munge.key,
# created when missing.
#
# Environment: RAVE_SLURM_DIR (above), RAVE_SLURM_TIMEOUT (seconds to wait for the node to
# be idle, default 60). Idempotent: `start` on a running cluster only checks it.
set -euo pipefail

dir="${RAVE_SLURM_DIR:-/var/lib/rave-slurm}"
timeout_s="${RAVE_SLURM_TIMEOUT:-60}"
conf=/etc/slurm/slurm.conf
mark="# Written by RAVE scripts/slurm_local.sh (a one-node test cluster)."
munge_key=/etc/munge/munge.key
munge_pid=/run/munge/munged.pid
host="$(hostname -s)"

# The daemons run as root and the files are system-wide: become root first.
if [[ $(id -u) != 0 && ${1:-} =~ ^(start|stop)$ ]]; then
  command -v sudo >/dev/null || { echo "slurm_local: $1 needs root (no sudo here)" >&2; exit 1; }
  exec sudo RAVE_SLURM_DIR="$dir" RAVE_SLURM_TIMEOUT="$timeout_s" bash "$0" "$@"
fi

say() { printf '\033[1mslurm_local:\033[0m %s\n' "$*"; }
die() { printf 'slurm_local: %s\n' "$*" >&2; exit 1; }

# 0 when the pid in file $1 is a live process named $2 (not a reused pid of a stale file).
alive() { [[ -s $1 && "$(cat "/proc/$(cat "$1")/comm" 2>/dev/null)" == "$2" ]]; }

# Debian's slurm-wlm (slurmctld, slurmd, the client commands) and munge, without their
# recommended extras (HDF5, IPMI, ... plugins the test cluster does not use).
install_packages() {
  local missing=()
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
    && command -v sbatch >/dev/null || missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  ((${#missing[@]})) || return 0
  say "installing Debian packages: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The CPUs this script may use (`nproc`, within any affinity limit): never more than
# slurmd finds, which would leave the node invalid.
node_cpus() { nproc; }

# Write $conf; set config_changed=1 when its text changed.
config_changed=0
write_config() {
  if [[ -e $conf ]] && ! grep -qxF "$mark" "$conf"; then
    die "$conf exists and was not written by this script (a real cluster's?); not replacing it"
  fi
  mkdir -p "$(dirname "$conf")" "$dir/state" "$dir/spool"
  local new
  new="$(cat <<EOF
$mark
# Do not edit: \`bash scripts/slurm_local.sh start\` rewrites it.
ClusterName=rave-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
# No cgroups: processes are tracked by their parent ids, tasks are not confined.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# No accounting database.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# One job per core: array tasks run side by side on this node.
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Start jobs whose dependency was just met within a second, not at the next minute.
SchedulerParameters=sched_interval=1,sched_min_interval=100000
# A node that restarts (this script's start after a stop) comes back by itself.
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(node_cpus) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)"
  if [[ ! -f $conf || "$(cat "$conf")" != "$new" ]]; then
    say "writing $conf (node $host, $(node_cpus) CPUs, state in $dir)"
    printf '%s\n' "$new" >"$conf"
    config_changed=1
  fi
}

start_munge() {
  if [[ ! -s $munge_key ]]; then
    say "creating the munge key $munge_key"
    mkdir -p "$(dirname "$munge_key")"
    (umask 077; dd if=/dev/urandom of="$munge_key" bs=1024 count=1 status=none)
  fi
  # munged insists that its key, state and socket folders belong to the user it runs as.
  local user=root
  id munge >/dev/null 2>&1 && user=munge
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown "$user:" "$munge_key" /run/munge /var/lib/munge /var/log/munge /etc/munge
  chmod 0400 "$munge_key"
  chmod 0700 /etc/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  if alive "$munge_pid" munged && munge -n </dev/null | unmunge >/dev/null 2>&1; then
    return
  fi
  say "starting munged (as $user)"
  if [[ $user == root ]]; then munged; else runuser -u munge -- munged; fi
  munge -n </dev/null | unmunge >/dev/null || die "munged started but cannot encode and decode a credential"
}

# Start daemon $1 (slurmctld or slurmd) unless its pid file names a live process.
start_daemon() {
  local name=$1 pidfile="$dir/$1.pid"
  if alive "$pidfile" "$name"; then return; fi
  say "starting $name"
  "$name" || die "$name did not start; its log: $dir/$name.log"
}

# Wait until sinfo shows the node up (idle, or busy with jobs of an earlier start).
wait_idle() {
  local deadline=$((SECONDS + timeout_s)) state=""
  while ((SECONDS < deadline)); do
    state="$(sinfo -h -n "$host" -o %t 2>/dev/null | head -1 || true)"
    case "$state" in
      idle | mix | alloc | comp) say "node $host is $state"; return 0 ;;
      down* | drain*)
        # A node that was stopped mid-job can stay down: the test cluster has no one to
        # investigate, so bring it back.
        scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 1
  done
  echo "slurm_local: node $host not idle after ${timeout_s}s (sinfo says '${state:-nothing}')" >&2
  for log in "$dir/slurmctld.log" "$dir/slurmd.log"; do
    echo "--- last lines of $log" >&2
    tail -n 15 "$log" >&2 2>/dev/null || true
  done
  exit 1
}

stop_daemon() {
  local name=$1 pidfile=$2 pid
  alive "$pidfile" "$name" || return 0
  pid="$(cat "$pidfile")"
  say "stopping $name (pid $pid)"
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  die "$name (pid $pid) still running 10 s after SIGTERM"
}

case "${1:-}" in
  start)
    t0=$SECONDS
    install_packages
    write_config
    start_munge
    if ((config_changed)); then
      # A running daemon keeps its old config: restart it with the new one.
      stop_daemon slurmd "$dir/slurmd.pid"
      stop_daemon slurmctld "$dir/slurmctld.pid"
    fi
    start_daemon slurmctld
    start_daemon slurmd
    wait_idle
    say "ready in $((SECONDS - t0)) s (partition debug, try: sbatch --wrap hostname)"
    ;;
  stop)
    stop_daemon slurmd "$dir/slurmd.pid"
    stop_daemon slurmctld "$dir/slurmctld.pid"
    stop_daemon munged "$munge_pid"
    ;;
  status)
    # Exit 0 only when all three daemons run.
    up=0
    for d in slurmctld slurmd; do
      if alive "$dir/$d.pid" "$d"; then echo "$d: running (pid $(cat "$dir/$d.pid"))"; up=$((up + 1)); else echo "$d: stopped"; fi
    done
    if alive "$munge_pid" munged; then echo "munged: running (pid $(cat "$munge_pid"))"; up=$((up + 1)); else echo "munged: stopped"; fi
    ((up == 3)) || exit 1
    sinfo
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
