#!/usr/bin/env bash
# Upscale one video on a Slurm cluster, one segment per array task, in one command:
#
#   deploy/slurm/submit.sh --work /shared/jobs/film [options] -- -i /shared/in/film.mkv \
#       -o /shared/out/film_x2.mkv -m realesr-animevideov3-x2 --device gpu [rave plan options]
#
# What it does, on the host you run it on (a login node):
#   1. `rave plan --work WORK --json ARGS...`: probes the input, cuts it into N segments at
#      keyframes and writes WORK/manifest.json. Everything after `--` goes to `rave plan`:
#      -i, -o, -m and any `rave upscale` option (--codec, --crf, --preset, --overwrite, ...),
#      and --segment-frames to choose the segment length (and so N).
#   2. `sbatch --array=0-(N-1)%K rave-array.sbatch WORK RAVE`: N tasks, at most K at once,
#      each running `rave segment --work WORK --index $SLURM_ARRAY_TASK_ID`.
#   3. `sbatch --dependency=afterok:ARRAY rave-assemble.sbatch WORK RAVE`: starts when every
#      task succeeded, writes the output and removes rave's files from WORK (unless
#      --keep-work; the logs stay). If a task fails, Slurm cancels this job
#      (--kill-on-invalid-dep) instead of leaving it pending for ever.
#
# Requirements: WORK, the input and the output folder on storage that this host and every
# compute node see at the same paths; the rave binary (--rave) at the same path everywhere,
# with its runtime (FFmpeg libraries, ONNX Runtime, models in RAVE_HOME). Jobs inherit this
# shell's environment (sbatch's default --export=ALL), RAVE_HOME included.
#
# Resuming an unfinished job: run the same command again. The plan is kept (the same input
# and settings; changed ones are refused), finished segments exit 0 at once, only the
# missing ones do work.
#
# Prints the two job ids; with --wait, waits for the assemble job and exits with its status
# (0: the output is written). Logs go to LOGS/segment-ARRAYID_INDEX.out and
# LOGS/assemble-JOBID.out (LOGS: WORK/slurm-logs unless --logs).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: submit.sh --work DIR [options] -- RAVE_PLAN_ARGS...
  --work DIR         the job's work folder, on shared storage (required)
  --rave PATH        the rave binary, same path on every node (default: rave on PATH)
  --max-parallel K   run at most K segments at once (default: no limit but the cluster's)
  --partition NAME   the partition for both jobs (default: the cluster's default)
  --gpus N           GPUs per segment task, as --gres=gpu:N (default: 0, none)
  --cpus N           CPUs per segment task, as --cpus-per-task (default: Slurm's, 1)
  --time LIMIT       time limit per segment task, as sbatch --time (default: the partition's)
  --logs DIR         folder for the job logs (default: WORK/slurm-logs)
  --keep-work        keep WORK after assembling (rave assemble --keep-work)
  --sbatch OPTION    one more sbatch option for both jobs, e.g. --sbatch --account=vid
                     (repeatable)
  --wait             wait until the assemble job ends; exit 0 only when it succeeded
  -h, --help         this text
Everything after -- goes to `rave plan` (-i IN -o OUT -m MODEL, rave upscale options,
--segment-frames N).
EOF
}

die() { echo "submit.sh: $*" >&2; exit 2; }

# The state (COMPLETED, FAILED, CANCELLED, ...) of job $1: from slurmctld while it still
# holds the job (MinJobAge, 300 s by default), else from accounting where there is one.
job_state() {
  scontrol show job -o "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 \
    || sacct -n -X -P -j "$1" -o State 2>/dev/null | head -1 | cut -d' ' -f1
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="" rave="rave" max_parallel=0 partition="" gpus=0 cpus="" time_limit="" logs="" wait=0
extra=() assemble_options=()
while (($#)); do
  case "$1" in
    --work) work="${2:?--work needs a folder}"; shift 2 ;;
    --rave) rave="${2:?--rave needs a path}"; shift 2 ;;
    --max-parallel) max_parallel="${2:?--max-parallel needs a number}"; shift 2 ;;
    --partition) partition="${2:?--partition needs a name}"; shift 2 ;;
    --gpus) gpus="${2:?--gpus needs a number}"; shift 2 ;;
    --cpus) cpus="${2:?--cpus needs a number}"; shift 2 ;;
    --time) time_limit="${2:?--time needs a limit}"; shift 2 ;;
    --logs) logs="${2:?--logs needs a folder}"; shift 2 ;;
    --sbatch) extra+=("${2:?--sbatch needs an option}"); shift 2 ;;
    --keep-work) assemble_options+=(--keep-work); shift ;;
    --wait) wait=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; die "unknown option '$1' (rave plan options go after --)" ;;
  esac
done
plan_args=("$@")
[[ -n $work ]] || { usage >&2; die "--work is required"; }
((${#plan_args[@]})) || { usage >&2; die "no rave plan arguments after -- (at least -i IN -o OUT)"; }
for n in "$max_parallel" "$gpus" ${cpus:+"$cpus"}; do
  [[ $n =~ ^[0-9]+$ ]] || die "'$n' is not a whole number"
done
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm submit host"
rave_path="$(command -v "$rave")" || die "rave binary '$rave' not found (--rave PATH)"
# Absolute paths: the jobs may start in another folder, and rave_path must be the same
# binary on the compute nodes.
rave_path="$(realpath "$rave_path")"
work="$(realpath -m "$work")"
logs="$(realpath -m "${logs:-$work/slurm-logs}")"

# 1. Plan. rave prints its own error (and exits non-zero) on a bad input or option.
plan_json="$("$rave_path" plan --work "$work" --json "${plan_args[@]}")"
segments="$(grep -oE '"segments"[[:space:]]*:[[:space:]]*[0-9]+' <<<"$plan_json" | head -1 | grep -oE '[0-9]+$' || true)"
[[ -n $segments ]] || die "rave plan printed no segment count: $plan_json"
((segments > 0)) || die "rave plan made no segments (an input without video frames?)"
# Slurm refuses array indices at or above MaxArraySize (1001 by default).
max_array="$(scontrol show config 2>/dev/null | awk '$1 == "MaxArraySize" {print $3}')"
if [[ $max_array =~ ^[0-9]+$ ]] && ((segments > max_array)); then
  die "$segments segments, but this cluster's MaxArraySize is $max_array: plan fewer, longer segments (--segment-frames) or raise MaxArraySize"
fi
echo "submit.sh: planned $segments segments in $work"

# Options both jobs share.
common=(--parsable)
[[ -n $partition ]] && common+=(--partition "$partition")
common+=("${extra[@]}")
mkdir -p "$logs"

# 2. The array: task I runs segment I.
range="0-$((segments - 1))"
((max_parallel > 0)) && range+="%$max_parallel"
task=(--array "$range" --job-name rave-segment --output "$logs/segment-%A_%a.out")
((gpus > 0)) && task+=(--gres "gpu:$gpus")
[[ -n $cpus ]] && task+=(--cpus-per-task "$cpus")
[[ -n $time_limit ]] && task+=(--time "$time_limit")
array_id="$(sbatch "${common[@]}" "${task[@]}" "$here/rave-array.sbatch" "$work" "$rave_path")"
array_id="${array_id%%;*}" # --parsable prints "id" or "id;cluster"
echo "submit.sh: segments job $array_id (array $range)"

# 3. Assemble once every task succeeded; cancelled by Slurm if one failed.
assemble=(--dependency "afterok:$array_id" --kill-on-invalid-dep=yes
  --job-name rave-assemble --output "$logs/assemble-%j.out")
assemble_id="$(sbatch "${common[@]}" "${assemble[@]}" "$here/rave-assemble.sbatch" "$work" "$rave_path" \
  "${assemble_options[@]}")"
assemble_id="${assemble_id%%;*}"
echo "submit.sh: assemble job $assemble_id (after $array_id succeeds); logs in $logs"
((wait)) || exit 0

# --wait: poll the assemble job until it ends (every 2 s for a minute, then every 15 s, to
# spare slurmctld on long runs). Not `sbatch --wait`: it exits 0 for a job Slurm cancelled
# before it ran, which is what a failed segment does to this one.
# An empty answer (slurmctld busy, or the job already forgotten) is retried 5 times.
started=$SECONDS misses=0
while :; do
  state="$(job_state "$assemble_id")"
  case "$state" in
    PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUE* | RESIZING | SIGNALING | STAGE_OUT) misses=0 ;;
    "") ((++misses < 5)) || break ;;
    *) break ;;
  esac
  sleep $((SECONDS - started < 60 ? 2 : 15))
done
if [[ $state == COMPLETED ]]; then
  echo "submit.sh: assemble job $assemble_id COMPLETED: the output is written"
  exit 0
fi
echo "submit.sh: assemble job $assemble_id ${state:-ended, state unknown}: see $logs and \`rave status --work $work\`; run this command again to resume" >&2
exit 1
