#!/usr/bin/env bash
# Joined MPEG-TS/PS inputs on NVDEC against the CPU (the twenty-first session's splice
# changes, the twenty-third's seams, the twenty-fourth's repeats, the twenty-fifth's copies found from their packets,
# the twenty-sixth's captures joined inside a picture and a part without a keyframe): parts whose clocks overlap a little, a segment written twice or cut short then whole, written again a segment later, or twice with its counters renumbered, two captures each begun mid-GOP, AC-3 parts, a part whose sound leads its picture, a part whose sound starts
# 0.1 s after its picture (MPEG-PS), a recording cut by FFmpeg's segment muxer and joined
# back, an audio PES lost whole; and MPEG-PS files (a VOB with AC-3, an .mpg with MP2)
# cut at a 2048-byte pack inside an open GOP. For each: exit codes, frames and audio packets in and out,
# the warnings, and whether the GPU output's frame and audio times equal the CPU output's.
# On the GPU machine after the staged calls of scripts/gpu_tests.sh stage.
# Usage: OUT=DIR bash scripts/gpu_joins.sh
source /opt/rave-dev/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu_common.sh"
ff() { ffmpeg -v error -y "$@"; }
size=640x360
part() { # name seconds video_delay audio_delay video_codec audio_codec [format]
  ff -itsoffset "$3" -f lavfi -i "testsrc2=s=$size:r=25:d=$2" -itsoffset "$4" \
    -f lavfi -i "sine=f=440:r=48000:d=$2" -c:v "$5" -g 25 -bf 2 -c:a "$6" -b:a 128k \
    ${7:+-f $7} "$work/$1"
}
part ac3.ts 4 0 0 libx264 ac3
part lead1.ts 4 0 0 libx264 mp2
part lead2.ts 3 0.2 0 libx264 mp2
part ps1.mpg 3 0 0 mpeg2video mp2
part ps2.mpg 4 0 0.1 mpeg2video mp2
part whole.ts 8 0 0 libx264 mp2
part whole.vob 8 0 0 mpeg2video ac3 vob
part whole.mpg 8 0 0 mpeg2video mp2 mpeg
part whole_m2.ts 8 0 0 mpeg2video mp2
ff -f lavfi -i "mandelbrot=s=$size:r=25" -f lavfi -i "sine=f=880:r=48000:d=8" -t 8 -c:v mpeg2video -g 25 -bf 2 -c:a mp2 -b:a 128k "$work/other_m2.ts"
for f in whole.vob whole.mpg; do
  packs=$(( $(stat -c %s "$work/$f") / 2048 ))
  tail -c +$(( packs * 37 / 100 * 2048 + 1 )) "$work/$f" > "$work/cut_$f"
done
ff -i "$work/whole.ts" -c copy -f segment -segment_time 3 -segment_format mpegts "$work/seg%d.ts"
# Parts whose clocks overlap a little (the twenty-third session's seams): no B-frames then
# three, starting 0.08 s before the first's picture ends; and six one-second parts, each
# overlapping the one before by its sound's priming.
ff -f lavfi -i "testsrc2=s=$size:r=25:d=3" -f lavfi -i "sine=r=48000:d=3" -c:v libx264 -bf 0 -g 25 -c:a aac "$work/o1.ts"
ff -f lavfi -i "testsrc2=s=$size:r=25:d=3" -f lavfi -i "sine=r=48000:d=3" -c:v libx264 -bf 3 -g 25 -c:a aac -output_ts_offset 2.92 "$work/o2.ts"
cat "$work/o1.ts" "$work/o2.ts" > "$work/join_overlap.ts"
for k in 0 1 2 3 4 5; do
  ff -f lavfi -i "testsrc2=s=$size:r=25:d=1" -f lavfi -i "sine=r=48000:d=1" -c:v libx264 -bf 0 -g 25 -c:a aac -output_ts_offset $k "$work/six$k.ts"
  cat "$work/six$k.ts" >> "$work/join_six.ts"
done
ff -i "$work/ac3.ts" -map 0 -c copy -metadata service_name=second "$work/ac3b.ts"
cat "$work/ac3.ts" "$work/ac3b.ts" > "$work/join_ac3.ts"
cat "$work/lead1.ts" "$work/lead2.ts" > "$work/join_lead.ts"
cat "$work/ps1.mpg" "$work/ps2.mpg" > "$work/join_ps.mpg"
cat "$work/seg0.ts" "$work/seg1.ts" "$work/seg2.ts" > "$work/join_segments.ts"
# A segment written twice in a row, and one cut short then written whole (the twenty-fourth
# session's repeats): with --allow-corrupt the same as the segments joined once.
cat "$work/seg0.ts" "$work/seg1.ts" "$work/seg1.ts" "$work/seg2.ts" > "$work/repeat_segment.ts"
{ cat "$work/seg0.ts"; head -c $((188 * 200)) "$work/seg1.ts"; cat "$work/seg1.ts" "$work/seg2.ts"; } > "$work/repeat_cut.ts"
# A segment written again after the next one, and one written twice in a row in a file
# whose continuity counters were renumbered (the twenty-fifth session's copies found from
# their packets): with --allow-corrupt the same as the segments joined once.
cat "$work/seg0.ts" "$work/seg1.ts" "$work/seg0.ts" "$work/seg2.ts" > "$work/repeat_later.ts"
python3 - "$work/repeat_segment.ts" "$work/repeat_renumbered.ts" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
cc = {}
for i in range(0, len(b), 188):
    pid = ((b[i + 1] & 0x1F) << 8) | b[i + 2]
    nxt = cc.get(pid, 0)
    if b[i + 3] & 0x10:
        b[i + 3] = (b[i + 3] & 0xF0) | nxt
        cc[pid] = (nxt + 1) & 0x0F
    else:
        b[i + 3] = (b[i + 3] & 0xF0) | ((nxt - 1) & 0x0F)
open(sys.argv[2], "wb").write(b)
EOF
# Two captures joined, each begun mid-GOP (the twenty-fifth session's parts' leading
# packets): every frame each gives alone, the second's before its first keyframe skipped.
ff -f lavfi -i "mandelbrot=s=$size:r=25" -f lavfi -i "sine=f=660:r=48000" -t 6 -c:v libx264 -g 25 -bf 2 -c:a mp2 -output_ts_offset 5000 "$work/cap2.ts"
python3 - "$work/whole.ts" "$work/cap2.ts" "$work/join_midgop.ts" <<'EOF'
import sys
a = open(sys.argv[1], "rb").read()
b = open(sys.argv[2], "rb").read()
cut = lambda d, pct: len(d) // 188 * pct // 100 * 188
open(sys.argv[3], "wb").write(a[cut(a, 33):] + b[cut(b, 37):])
EOF
# MPEG-2 captures, the second cut inside a picture's PES where the video's counter breaks
# (the twenty-sixth session's fragments); a capture joined on after its last keyframe.
python3 - "$work/whole_m2.ts" "$work/other_m2.ts" "$work/whole.ts" "$work/lead1.ts" "$work/join_inside.ts" "$work/join_unkeyed.ts" <<'EOF'
import sys
m2a, m2, h264, other = (open(f, "rb").read() for f in sys.argv[1:5])
cut = lambda d, pct: len(d) // 188 * pct // 100 * 188
pid = lambda p: ((p[1] & 0x1F) << 8) | p[2]
a = m2a[cut(m2a, 21):]
last = [p[3] & 15 for p in (a[i:i + 188] for i in range(0, len(a), 188)) if pid(p) == 0x100][-1]
def inside(at):
    p = m2[at:at + 188]
    return pid(p) == 0x100 and not p[1] & 0x40 and (p[3] & 15) not in (last, (last + 1) % 16)
at = next(at for at in range(cut(m2, 40), len(m2), 188) if inside(at))
open(sys.argv[5], "wb").write(a + m2[at:])
open(sys.argv[6], "wb").write(h264[cut(h264, 33):] + other[cut(other, 97):])
EOF
python3 - "$work/whole.ts" "$work/lost_pes.ts" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
n = len(b) // 188
pid = lambda i: ((b[i * 188 + 1] & 0x1F) << 8) | b[i * 188 + 2]
lost = set([i for i in range(n // 2, n) if pid(i) == 0x101][:16])
open(sys.argv[2], "wb").write(b"".join(b[i * 188:(i + 1) * 188] for i in range(n) if i not in lost))
EOF
count() { ffprobe -v quiet -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" | tr -d ',' | grep -v '^$' | head -1; }
apk() { ffprobe -v quiet -select_streams a:0 -show_entries packet=size -of csv=p=0 "$1" | grep -c .; }
times() { ffprobe -v error -select_streams "$2" -show_entries packet=pts_time -of csv=p=0 "$1" | sort -g | md5sum | cut -c1-8; }
for input in join_overlap.ts join_six.ts join_ac3.ts join_lead.ts join_ps.mpg join_segments.ts repeat_segment.ts repeat_cut.ts repeat_later.ts repeat_renumbered.ts join_midgop.ts join_inside.ts join_unkeyed.ts lost_pes.ts cut_whole.vob cut_whole.mpg; do
  line="$input: in $(count "$work/$input") frames, $(apk "$work/$input") audio packets"
  for device in gpu cpu; do
    o="$work/${input//./_}_$device.mkv"
    allow=""
    case $input in repeat_*) allow=--allow-corrupt ;; esac
    rave upscale -i "$work/$input" -o "$o" --device "$device" -m tests/fixtures/nearest_x2.onnx --progress off $allow > "$work/log" 2>&1
    rc=$?
    said=$(grep -oE "restart [0-9]+ time|step back|audio has gaps of [0-9.]+ s|rave: error: .{0,80}|starts mid-GOP|[0-9]+ video frames before|repeats itself|[0-9]+ duplicated frames dropped|[0-9]+ video frames? before their first keyframes|holds no video keyframe" "$work/log" | sort -u | tr '\n' ' ')
    line="$line | $device: exit $rc, $(count "$o") frames, $(apk "$o") audio, video times $(times "$o" v:0), audio times $(times "$o" a:0); $said"
  done
  echo "$line"
done | tee "$out/joins.txt"
