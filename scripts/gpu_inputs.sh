#!/usr/bin/env bash
# The checks of the ninth session on the GPU path (NVDEC) beside the CPU, on the GPU machine
# after scripts/gpu_tests.sh staged /opt/rave-dev (run with /opt/rave-dev/env.sh sourced):
#   midgop   MPEG-TS captures cut a third in (mid-GOP), without and with B-frames: the
#            frames before the first keyframe are skipped and said, every decodable frame
#            and audio packet kept, in one segment and in several;
#   audio    an MP4 whose AAC packets were overwritten in three places: refused (exit 3,
#            audio_packets_damaged 3) before work; with --allow-corrupt every packet copied;
#   stsc     an MP4 whose audio chunk map (stsc) places fewer samples than it lists: refused.
# One line per input and device: exit code, frames out, the counts, the first problem.
set -u
export PATH="/opt/rave-dev/payload:$PATH"
w=/tmp/inputs; mkdir -p "$w"; cd "$w"
m=/opt/rave-dev/payload/models/realesr-animevideov3-x2.onnx
mk() { ffmpeg -y -v error -f lavfi -i testsrc2=size=320x240:rate=25:duration=4 -f lavfi -i sine=frequency=300:sample_rate=48000:duration=4 -c:v libx264 -threads 1 -g 25 "$@"; }
mk -bf 0 -c:a aac whole_p.ts
mk -c:a aac whole_b.ts
mk -c:a aac clean.mp4
python3 - <<'PY'
import json, struct, subprocess
for src, dst in [("whole_p.ts", "midgop_p.ts"), ("whole_b.ts", "midgop_b.ts")]:
    d = open(src, "rb").read()
    open(dst, "wb").write(d[188 * (len(d) // 188 // 3):])
# Three AAC packets overwritten from a quarter of their bytes on.
p = json.loads(subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0",
    "-show_entries", "packet=pos,size", "-of", "json", "clean.mp4"]))["packets"]
d = bytearray(open("clean.mp4", "rb").read())
for k in p[len(p) // 2:len(p) // 2 + 3]:
    pos, size = int(k["pos"]), int(k["size"])
    for i in range(pos + size // 4, pos + size - 2):
        d[i] = (i * 151 + 89) & 0xFF
open("audio.mp4", "wb").write(d)
# The audio track's chunk map: the first run of several samples per chunk one short.
d = bytearray(open("clean.mp4", "rb").read())
at = [i - 4 for i in range(len(d)) if d[i:i + 4] == b"stsc"][1]
n = struct.unpack(">I", d[at + 12:at + 16])[0]
for e in range(n):
    q = at + 16 + 12 * e + 4
    v = struct.unpack(">I", d[q:q + 4])[0]
    if v > 1:
        d[q:q + 4] = struct.pack(">I", v - 1)
        break
open("stsc.mp4", "wb").write(d)
PY
for f in midgop_p.ts midgop_b.ts audio.mp4 stsc.mp4; do
  for dev in gpu cpu; do
    # The captures in one segment and in several; the damaged files strict and allowed.
    for allow in "" --allow-corrupt; do
      [[ -n $allow && $f == midgop* ]] && allow="--segment-frames 20"
      o="out_${dev}_${f/./_}${allow:+_2}.mkv"
      rave upscale -i "$f" -o "$o" -m "$m" --device $dev --overwrite --progress off --json $allow > "$o.json" 2> "$o.err"
      rc=$?
      python3 - "$f" "$o" "$rc" "$dev" "$o.json" "$allow" <<'PY'
import json, subprocess, sys
f, o, rc, dev, js, allow = sys.argv[1:]
def count(p, s):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", s, "-count_packets",
        "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", p],
        capture_output=True, text=True).stdout.split()
    return out[0] if out else "-"
r = json.load(open(js))
d = r.get("input_damage") or r.get("error", {}).get("damage") or {}
line = f"{f:12} {dev} {allow or 'strict':20} exit {rc}"
if rc == "0":
    line += f", decoder {r['gpu']['decoder'][:5] if r.get('gpu') else 'cpu'}, frames {r.get('frames_out')}, audio {count(o, 'a:0')}/{count(f, 'a:0')}"
keys = ("frames_before_first_keyframe", "frames_missing", "audio_packets_damaged", "demux_errors", "decoder_errors")
line += "; " + ", ".join(f"{k} {d.get(k)}" for k in keys) + f"; first: {d.get('first_problem')}"
print(line)
PY
    done
  done
done
