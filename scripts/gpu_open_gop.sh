#!/usr/bin/env bash
# Captures cut inside an open GOP on the GPU path (NVDEC) beside the CPU, on the GPU machine
# after scripts/gpu_tests.sh staged /opt/rave-dev (run with /opt/rave-dev/env.sh sourced).
# H.264 open-gop, HEVC (CRA) and MPEG-2 MPEG-TS files, and HEVC with RADL pictures (leading
# pictures that decode, kept), 320x240, cut a third in; each cut is
# upscaled in one segment, in several (--segment-frames 20) and with --max-frames 5, and the
# uncut file once, all losslessly encoded (x264 CRF 0): the cut's frames must be the uncut
# file's frames from the cut's first keyframe on (same device, same model).
# One line per cut, device and mode: exit code, decoder, frames, frames skipped, errors, and
# how many frames are byte-identical to the uncut file's (and the lowest PSNR of the others).
# Then the files without an index cut into small segments (an open-GOP H.264 MPEG-TS at
# --segment-frames 5, an MPEG-PS at 12): their frames against one segment's, same device.
set -u
export PATH="/opt/rave-dev/payload:$PATH"
w=/tmp/opengop; mkdir -p "$w"; cd "$w"
m=/opt/rave-dev/payload/models/realesr-animevideov3-x2.onnx
src=(-f lavfi -i testsrc2=size=320x240:rate=25:duration=4 -f lavfi -i sine=frequency=300:sample_rate=48000:duration=4)
ffmpeg -y -v error "${src[@]}" -c:v libx264 -threads 1 -g 25 -bf 3 -x264-params open-gop=1 -c:a aac whole_h264.ts
ffmpeg -y -v error "${src[@]}" -c:v libx265 -x265-params log-level=error:keyint=25:open-gop=1:bframes=3:frame-threads=1:pools=none -c:a aac whole_hevc.ts
ffmpeg -y -v error "${src[@]}" -c:v mpeg2video -g 25 -bf 2 -q:v 4 -c:a aac whole_mpeg2.ts
# Leading pictures that decode from the keyframe alone (kept): HEVC RADL pictures.
ffmpeg -y -v error "${src[@]}" -c:v libx265 -x265-params log-level=error:keyint=12:min-keyint=12:open-gop=0:radl=2:bframes=4:frame-threads=1:pools=none -c:a aac whole_radl.ts
for c in h264 hevc mpeg2 radl; do
  python3 -c "import sys; d=open('whole_$c.ts','rb').read(); open('cut_$c.ts','wb').write(d[188*(len(d)//188//3):])"
  for dev in gpu cpu; do
    lossless=(-m "$m" --device "$dev" --encoder x264 --crf 0 --overwrite --progress off --json)
    rave upscale -i whole_$c.ts -o whole_${c}_$dev.mkv "${lossless[@]}" > whole_${c}_$dev.json 2> whole_${c}_$dev.err \
      || { echo "$c $dev: the uncut file failed: $(tail -1 whole_${c}_$dev.err)"; continue; }
    for mode in one several max5; do
      case $mode in one) extra=();; several) extra=(--segment-frames 20);; max5) extra=(--max-frames 5);; esac
      o=cut_${c}_${dev}_$mode.mkv
      rave upscale -i cut_$c.ts -o $o "${lossless[@]}" "${extra[@]}" > $o.json 2> $o.err
      python3 - "$c" "$dev" "$mode" "$?" "$o" whole_${c}_$dev.mkv whole_$c.ts cut_$c.ts <<'PY'
import hashlib, json, math, subprocess, sys
c, dev, mode, rc, out, whole_out, whole, cut = sys.argv[1:]
def raw(p):
    return subprocess.run(["ffmpeg", "-v", "error", "-i", p, "-map", "0:v:0", "-vsync", "passthrough",
        "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"], capture_output=True).stdout
def packets(p):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
        "packet=pts,flags", "-of", "csv=p=0", p], capture_output=True, text=True).stdout
    return [(int(a), b.startswith("K")) for a, b in (l.strip().split(",")[:2] for l in out.splitlines() if "," in l)]
r = json.load(open(out + ".json"))
d = r.get("input_damage") or r.get("error", {}).get("damage") or {}
line = f"{c:5} {dev} {mode:7} exit {rc}"
if rc == "0":
    size = 640 * 480 * 3 // 2
    got, ref = raw(out), raw(whole_out)
    # Where the output's first frame is in the uncut file's upscale (else the keyframe's place).
    key = next(p for p, k in packets(cut) if k)
    at = next((i for i in range(len(ref) // size) if ref[i * size:(i + 1) * size] == got[:size]),
        sorted(p for p, _ in packets(whole)).index(key))
    n = len(got) // size
    same, worst = 0, math.inf
    for i in range(n):
        a, b = got[i * size:(i + 1) * size], ref[(at + i) * size:(at + i + 1) * size]
        if a == b:
            same += 1
        elif len(a) == len(b):
            mse = sum((x - y) ** 2 for x, y in zip(a[::7], b[::7])) / len(a[::7])
            worst = min(worst, 10 * math.log10(255 ** 2 / mse) if mse else math.inf)
    decoder = r["gpu"]["decoder"][:5] if r.get("gpu") else "cpu"
    line += f", decoder {decoder}, frames {r.get('frames_out')}, identical to the uncut file's {same}/{n}"
    if worst != math.inf:
        line += f" (others >= {worst:.1f} dB)"
else:
    line += f": {open(out + '.err').read().strip().splitlines()[-1][:200]}"
keys = ("frames_before_first_keyframe", "frames_missing", "decoder_errors")
print(line + "; " + ", ".join(f"{k} {d.get(k)}" for k in keys))
PY
    done
  done
done
ffmpeg -y -v error "${src[@]}" -c:v libx264 -threads 1 -g 12 -bf 3 -x264-params open-gop=1 -c:a mp2 seg_open.ts
ffmpeg -y -v error "${src[@]}" -c:v mpeg2video -g 12 -bf 2 -b:v 2M -c:a mp2 -f vob seg_program.mpg
for f in seg_open.ts:5 seg_program.mpg:12; do
  for dev in gpu cpu; do
    lossless=(-m "$m" --device "$dev" --encoder x264 --crf 0 --overwrite --progress off --json)
    rave upscale -i ${f%%:*} -o one.mkv "${lossless[@]}" > one.json 2> one.err
    rave upscale -i ${f%%:*} -o several.mkv "${lossless[@]}" --segment-frames ${f##*:} > several.json 2> several.err
    python3 - "$f" "$dev" <<'PY'
import hashlib, json, subprocess, sys
def md5s(p):
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", p, "-map", "0:v:0", "-f", "framemd5", "-"],
        capture_output=True, text=True).stdout
    return [l.split(",")[-1].strip() for l in out.splitlines() if not l.startswith("#")]
one, several = json.load(open("one.json")), json.load(open("several.json"))
if "error" in one or "error" in several:
    print(f"{sys.argv[1]:18} {sys.argv[2]}: {(one.get('error') or several.get('error'))['message'][:200]}")
else:
    a, b = md5s("one.mkv"), md5s("several.mkv")
    print(f"{sys.argv[1]:18} {sys.argv[2]} segments {several['segments']['total']}, frames {several['frames_out']}/{one['frames_out']}, identical to one segment's {sum(x == y for x, y in zip(a, b))}/{len(a)}")
PY
  done
done
