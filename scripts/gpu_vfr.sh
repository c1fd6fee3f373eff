#!/usr/bin/env bash
# Variable-rate and paused inputs through NVDEC (--device gpu) and the CPU, on the GPU
# machine after scripts/gpu_tests.sh staged /opt/rave-dev (run with /opt/rave-dev/env.sh
# sourced): a transport stream paused 1.04 s, a Matroska at 24 then 30 fps, a jittered MP4,
# an MP4 paused 1.5 s (H.264 with B-frames, AAC) and a jittered TS with frames 11 µs apart.
# Prints a line per input and device:
# the exit code, the decoder, and how far each packet's time (from the file's start) moved;
# the output's packet times must be the input's, every frame and packet kept.
set -u
export PATH="/opt/rave-dev/payload:$PATH"
w=/tmp/vfr; mkdir -p "$w"; cd "$w"
m=/opt/rave-dev/payload/models/realesr-animevideov3-x2.onnx
mk() { ffmpeg -y -v error -f lavfi -i testsrc2=size=320x240:rate=30:duration=3 -f lavfi -i sine=frequency=440:duration=3.5 -vf "settb=1/1000,setpts=($2)/TB" -fps_mode passthrough -enc_time_base 1:1000 -c:v libx264 -preset veryfast -c:a aac "$1"; }
mk paused.ts 'N/30+1.04*gte(N\,25)'
mk two_rates.mkv 'if(lt(N\,24)\,N/24\,1+(N-24)/30)'
mk jitter.mp4 'N/30+0.012*mod(N\,3)'
mk paused.mp4 'N/30+1.5*gte(N\,40)'
# A jittered 29.97 fps TS whose rounding leaves frame pairs one 90 kHz tick apart: in
# Matroska's milliseconds the second of each pair goes a tick later, every frame kept.
ffmpeg -y -v error -f lavfi -i testsrc2=size=320x240:rate=30000/1001:duration=3 -f lavfi -i sine=sample_rate=48000:duration=3 -vf "settb=1/90000,setpts='(N*1001/30000+0.011*mod(N,3))/TB'" -fps_mode passthrough -c:v libx264 -pix_fmt yuv420p -c:a aac -shortest jitter.ts
times() { ffprobe -v error -select_streams "$2" -show_entries packet=pts_time -of csv=p=0 "$1" | tr -d ',' | grep -v '^$' | sort -g; }
for f in paused.ts two_rates.mkv jitter.mp4 paused.mp4 jitter.ts; do
  for dev in gpu cpu; do
    o="out_${dev}_${f/./_}.mkv"
    rave upscale -i "$f" -o "$o" -m "$m" --device $dev --overwrite --progress off --json > "$o.json" 2> "$o.err"
    rc=$?
    python3 - "$f" "$o" "$rc" "$dev" "$o.json" <<'PY'
import json, subprocess, sys
f, o, rc, dev, js = sys.argv[1:]
def t(p, s):
    out = subprocess.run(["ffprobe","-v","error","-select_streams",s,"-show_entries","packet=pts_time","-of","csv=p=0",p],capture_output=True,text=True).stdout
    return sorted(float(x.strip(',')) for x in out.split() if x.strip(',') not in ('','N/A'))
line = f"{f:14} {dev}: exit {rc}"
if rc == "0":
    r = json.load(open(js))
    res = []
    for s in "va":
        a, b = t(f, s), t(o, s)
        a0 = min(t(f,"v")[0], t(f,"a")[0]); b0 = min(t(o,"v")[0], t(o,"a")[0])
        d = max(abs((x-a0)-(y-b0)) for x, y in zip(a, b)) if len(a) == len(b) else None
        res.append(f"{s} {len(a)}/{len(b)} max diff {d}")
    line += f", decoder {r['gpu']['decoder'][:5] if r.get('gpu') else 'cpu'}, " + "; ".join(res) + f"; warnings {len(r['mux']['warnings'])}"
print(line)
PY
  done
done
