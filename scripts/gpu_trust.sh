#!/usr/bin/env bash
# The trust fixes of 2026-12-02 (third session) on the GPU path, after scripts/gpu_tests.sh
# staged /opt/rave-dev: a 1920x1080 clip of real photographs (scripts/make_sample_clip.sh),
# x2 by realesr-animevideov3-x2 on NVDEC and the GPU, then:
#   late     an MPEG-TS starting an hour in: the MP4 and MKV outputs start at zero, last as
#            long as the clip, keep every frame and audio packet and the audio's offset;
#   wrap     an MPEG-TS whose clock wraps inside it: outputs start at zero, are whole and
#            decode cleanly; the job is one segment, and says why;
#   quiet    a run with an empty HOME and TMPDIR leaves nothing there but the kernel caches
#            (no ONNX Runtime telemetry store, device id or .ses file);
#   short    HEVC (x265) outputs of one and two frames;
#   gap      a P-only MPEG-TS with one PES header zeroed: NVDEC path, the run completes
#            with the missing frame slot said in a warning and input_damage.timeline_gaps;
#   batch    a batch into its own folder, one output removed, run again with
#            --skip-existing: the earlier output is left out as an input, the other redone;
#   bench    `rave benchmark` on the clip (speeds against earlier runs), TMPDIR empty after;
#   cut      --max-frames on an MKV with chapters and subtitles (fourth session): chapters
#            after the picture left out, the cut one and a long cue ending with it.
# Logs and a summary (trust.txt) go to $OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/gpu-results}"; mkdir -p "$out"
bin="${RAVE_TRUST_BIN:-/opt/rave-dev/payload}"
home="${RAVE_TRUST_HOME:-$bin}"   # models and photos (the staged payload holds both)
read -r width height <<<"${RAVE_TRUST_SIZE:-1920 1080}"   # a small size for a CPU dry run
export PATH="$bin:$PATH"
work="${RAVE_TRUST_WORK:-/tmp/rave-trust}"; rm -rf "$work"; mkdir -p "$work"
summary="$out/trust.txt"; : >"$summary"
status=0
say() { echo "== $*" | tee -a "$summary"; }
note() { echo "$*" | tee -a "$summary"; }
fail() { status=1; echo "FAIL: $*" | tee -a "$summary"; }
probe() { ffprobe -v error "$@"; }
# (An MPEG-TS lists its streams under its program too: the first line is the stream's.)
frames_of() { probe -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" | grep . | head -1; }
audio_of() { probe -count_packets -select_streams a:0 -show_entries stream=nb_read_packets -of csv=p=0 "$1" | grep . | head -1; }

clip="$work/real.mp4"
RAVE_HOME="$home" bash "$root/scripts/make_sample_clip.sh" "$clip" "$width" "$height" 120 50 >/dev/null || exit 1
note "date: $(date -u +%FT%TZ)  commit: ${RAVE_COMMIT:-unknown}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee -a "$summary"

say "late: an MPEG-TS starting an hour in"
ffmpeg -v error -i "$clip" -map 0 -c copy -output_ts_offset 3600 "$work/late.ts"
note "input: $(probe -show_entries format=start_time,duration -of compact=p=0 "$work/late.ts")"
for ext in mp4 mkv; do
  rave upscale -i "$work/late.ts" -o "$work/late.$ext" --preset veryfast --progress off --json \
    >"$out/late_$ext.json" 2>"$out/late_$ext.err" || fail "late.$ext: exit $?"
  start=$(probe -show_entries format=start_time -of csv=p=0 "$work/late.$ext")
  dur=$(probe -show_entries format=duration -of csv=p=0 "$work/late.$ext")
  f=$(frames_of "$work/late.$ext"); a=$(audio_of "$work/late.$ext")
  note "late.$ext: start $start s, duration $dur s, $f frames (input $(frames_of "$work/late.ts")), $a audio packets (input $(audio_of "$work/late.ts")), decoder: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["decode"]; print(d["frames"], "frames,", d["nvdec_frames"], "on NVDEC")' "$out/late_$ext.json")"
  python3 -c "import sys; sys.exit(0 if abs($start) < 0.01 and $dur < 6 else 1)" || fail "late.$ext does not start at zero"
  [[ $f == "$(frames_of "$work/late.ts")" && $a == "$(audio_of "$work/late.ts")" ]] || fail "late.$ext lost frames or audio"
done

say "wrap: an MPEG-TS whose 33-bit clock wraps just after its start (FFmpeg reads the start as negative)"
ffmpeg -v error -i "$clip" -map 0 -c copy -output_ts_offset 95442 "$work/wrap.ts"
note "input: $(probe -show_entries stream=start_time -of csv=p=0 "$work/wrap.ts" | grep . | head -1) s start"
for ext in mp4 mkv; do
  rave upscale -i "$work/wrap.ts" -o "$work/wrap.$ext" --preset veryfast --progress off --json --segment-frames 50 \
    >"$out/wrap_$ext.json" 2>"$out/wrap_$ext.err" || fail "wrap.$ext: exit $?"
  start=$(probe -show_entries format=start_time -of csv=p=0 "$work/wrap.$ext")
  f=$(frames_of "$work/wrap.$ext"); a=$(audio_of "$work/wrap.$ext")
  errors=$(ffmpeg -v error -i "$work/wrap.$ext" -f null - 2>&1 | head -3)
  note "wrap.$ext: start $start s, $f frames (input $(frames_of "$work/wrap.ts")), $a audio packets (input $(audio_of "$work/wrap.ts")), segments $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["segments"]; print(s["total"], "-", s.get("single_reason"))' "$out/wrap_$ext.json"); decode errors: ${errors:-none}"
  python3 -c "import sys; sys.exit(0 if abs($start) < 0.01 else 1)" || fail "wrap.$ext does not start at zero"
  [[ $f == "$(frames_of "$work/wrap.ts")" && $a == "$(audio_of "$work/wrap.ts")" && -z $errors ]] || fail "wrap.$ext lost frames or audio, or does not decode cleanly"
done

say "quiet: an empty HOME and TMPDIR get nothing but the kernel caches"
mkdir -p "$work/home" "$work/tmp"
env -u ORT_DISABLE_TELEMETRY HOME="$work/home" TMPDIR="$work/tmp" RAVE_HOME="$home" \
  rave upscale -i "$clip" -o "$work/quiet.mp4" --max-frames 30 --preset veryfast --progress off \
  >"$out/quiet.out" 2>"$out/quiet.err" || fail "quiet: exit $?"
# The kernel caches (RAVE's ~/.cache/rave, the driver's ~/.nv) are meant to stay.
left=$(find "$work/home" "$work/tmp" -mindepth 1 | grep -v -e "^$work/home/.cache$" -e "^$work/home/.cache/rave\(/\|$\)" -e "^$work/home/.nv\(/\|$\)" | head)
note "left in HOME and TMPDIR besides the kernel caches: ${left:-nothing}"
[[ -z $left ]] || fail "quiet: files left"

say "short: HEVC outputs of one and two frames"
for n in 1 2; do
  rave upscale -i "$clip" -o "$work/short$n.mkv" --codec hevc --max-frames "$n" --progress off \
    >"$out/short$n.out" 2>"$out/short$n.err" || fail "short$n: exit $? ($(tail -1 "$out/short$n.err"))"
  note "short$n: $(frames_of "$work/short$n.mkv") frames"
done

say "gap: a P-only MPEG-TS with one PES header zeroed"
ffmpeg -v error -i "$clip" -map 0 -c:v libx264 -preset veryfast -bf 0 -g 50 -c:a mp2 "$work/ponly.ts"
python3 - "$work/ponly.ts" "$work/gap.ts" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
starts = []
for at in range(0, len(data) - 188, 188):
    if data[at] != 0x47 or not data[at + 1] & 0x40:
        continue
    afc = (data[at + 3] >> 4) & 3
    payload = at + 5 + data[at + 4] if afc == 3 else at + 4 if afc == 1 else None
    if payload is not None and data[payload:payload + 4] == b"\0\0\1\xe0":
        starts.append(payload)
middle = starts[len(starts) // 2]
data[middle:middle + 9] = bytes(9)
open(sys.argv[2], "wb").write(data)
PY
rave upscale -i "$work/gap.ts" -o "$work/gap.mkv" --preset veryfast --progress off --json \
  >"$out/gap.json" 2>"$out/gap.err"
rc=$?
python3 - "$out/gap.json" "$rc" <<'PY' | tee -a "$summary" || fail "gap: a frame lost and not said"
import json, sys
r, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
d = r.get("input_damage") or r.get("error", {}).get("damage", {})
said = [w for w in r.get("mux", {}).get("warnings", []) if "frame slot" in w]
print(f"gap: exit {rc}; timeline_gaps {d.get('timeline_gaps')}, frames_missing {d.get('frames_missing')}, "
      f"decoder_errors {d.get('decoder_errors')}, frames decoded {d.get('frames_decoded')} of {d.get('frames_read')} read; "
      f"NVDEC frames {r.get('decode', {}).get('nvdec_frames')}; {said or r.get('error', {}).get('message', '')}")
# Either refused with the loss counted, or complete with the gap said.
sys.exit(0 if (rc == 3 and d.get("frames_missing", 0) > 0) or (rc == 0 and d.get("timeline_gaps", 0) > 0 and said) else 1)
PY

say "batch: into its own folder, run again with --skip-existing"
mkdir -p "$work/batch"
for n in a b; do ffmpeg -v error -i "$clip" -map 0 -c copy -t 2 "$work/batch/$n.ts"; done
rave upscale -i "$work/batch" -o "$work/batch" --preset veryfast --progress off >"$out/batch1.out" 2>"$out/batch1.err" || fail "batch: first pass"
rm -f "$work/batch/b.mkv"
rave upscale -i "$work/batch" -o "$work/batch" --preset veryfast --progress off --skip-existing \
  >"$out/batch2.out" 2>"$out/batch2.err" || fail "batch: second pass exit $?"
cat "$out/batch2.out" >>"$summary"
grep -q "left out     $work/batch/a.mkv" "$out/batch2.out" || fail "batch: a.mkv not left out"

say "bench: rave benchmark, TMPDIR empty after"
mkdir -p "$work/btmp"
TMPDIR="$work/btmp" rave benchmark -i "$clip" --json --progress off >"$out/bench.json" 2>"$out/bench.err" || fail "benchmark: exit $?"
python3 - "$out/bench.json" <<'PY' 2>&1 | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
inf, null, full = r["inference_only"]["fps"], r["null_encode"]["fps"], r["full"]["fps"]
print(f"inference alone {inf:.1f} fps, null encoder {null:.1f}, full pipeline (libx264 medium) {full:.1f}; backend {r['backend']}")
PY
left=$(find "$work/btmp" -mindepth 1 | head)
note "left in TMPDIR: ${left:-nothing}"
[[ -z $left ]] || fail "benchmark left files"

say "cut: --max-frames 30 on an MKV with three chapters and a long subtitle cue"
printf ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=3000\ntitle=Two\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=3000\nEND=4000\ntitle=Three\n' >"$work/chapters.txt"
printf '1\n00:00:00,500 --> 00:00:02,500\nLong cue\n\n2\n00:00:03,000 --> 00:00:03,800\nLate cue\n' >"$work/cues.srt"
ffmpeg -v error -i "$clip" -i "$work/cues.srt" -i "$work/chapters.txt" -map 0 -map 1 -map_chapters 2 -c copy "$work/chaptered.mkv"
rave upscale -i "$work/chaptered.mkv" -o "$work/cut.mkv" --max-frames 30 --preset veryfast --progress off \
  >"$out/cut.out" 2>"$out/cut.err" || fail "cut: exit $?"
vstart=$(probe -select_streams v:0 -show_entries stream=start_time -of csv=p=0 "$work/cut.mkv")
chapters=$(probe -show_entries chapter=end_time:chapter_tags=title -of csv=p=0 "$work/cut.mkv" | tr '\n' ' ')
cue=$(probe -select_streams s -show_entries packet=pts_time,duration_time -of csv=p=0 "$work/cut.mkv" | tr '\n' ' ')
dur=$(probe -show_entries format=duration -of csv=p=0 "$work/cut.mkv")
note "cut.mkv: $(frames_of "$work/cut.mkv") frames from $vstart s, duration $dur s; chapters (end, title): $chapters; cues (start, length): $cue"
python3 - "$vstart" "$chapters" "$cue" "$dur" <<'PY' || fail "cut: chapters or cues outlast the picture"
import sys
end = float(sys.argv[1]) + 1.2
chapters = [c.split(",") for c in sys.argv[2].split()]
cues = [tuple(map(float, c.split(","))) for c in sys.argv[3].split()]
ok = [t for _, t in chapters] == ["One", "Two"] and abs(float(chapters[-1][0]) - end) < 0.002
ok = ok and len(cues) == 1 and abs(sum(cues[0]) - end) < 0.002 and float(sys.argv[4]) < end + 0.05
sys.exit(0 if ok else 1)
PY

note "status: $status"
exit "$status"
