#!/usr/bin/env bash
# Inputs for `gpu_suite_damage_wrap.sh recent`, made here (this machine has Python; the GPU
# machine may not): closed captions in H.264, cover art, an MP4 edit list hiding audio, a
# rotation, iPhone QuickTime keys, a palette GIF and a bitstream pixel aspect ratio, each
# 320x180 (NVDEC's smallest HEVC picture is 144x144).
# Usage: bash scripts/make_recent_fixtures.sh [DIR]   (default .device/recent; carry it)
set -euo pipefail
d="${1:-.device/recent}"; mkdir -p "$d"
ff() { ffmpeg -v error -y -nostdin "$@"; }
src=(-f lavfi -i "testsrc2=size=320x180:rate=25:duration=2")
snd=(-f lavfi -i "sine=frequency=440:duration=2")
# Captions: plain H.264 without B-frames, an A/53 SEI before each slice (two characters
# unique to the frame, odd parity), then into MP4 at 30000/1001.
ff -f lavfi -i "testsrc2=size=320x180:rate=30000/1001:duration=2" -c:v libx264 -bf 0 -g 30 -f h264 "$d/plain.h264"
python3 - "$d/plain.h264" "$d/cc.h264" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
def ebsp(b):
    out, zeros = bytearray(), 0
    for x in b:
        if zeros >= 2 and x <= 3:
            out.append(3); zeros = 0
        out.append(x); zeros = zeros + 1 if x == 0 else 0
    return bytes(out)
parity = lambda c: c | (0x80 if bin(c).count('1') % 2 == 0 else 0)
# NAL units from their start code (3 or 4 bytes) to the next one's.
starts = [i for i in range(len(data) - 3) if data[i:i + 3] == b'\x00\x00\x01']
begin = [i - 1 if i > 0 and data[i - 1] == 0 else i for i in starts]
out, n = bytearray(), 0
for k, at in enumerate(starts):
    unit = data[begin[k]:begin[k + 1] if k + 1 < len(begin) else len(data)]
    if data[at + 3] & 0x1f in (1, 5):
        # Two printable characters unique to frame n (of 4096).
        cc = bytes([0xfc, parity(0x20 + n % 64), parity(0x20 + n // 64 % 64), 0xfd, 0x80, 0x80])
        payload = bytes([0xb5, 0, 0x31]) + b'GA94' + bytes([3, 0x42, 0xff]) + cc + b'\xff'
        out += b'\x00\x00\x00\x01' + ebsp(bytes([6, 4, len(payload)]) + payload + b'\x80')
        n += 1
    out += unit
open(sys.argv[2], 'wb').write(out)
PY
ff -r 30000/1001 -i "$d/cc.h264" -c copy "$d/cc.mp4"
rm -f "$d/plain.h264" "$d/cc.h264"
# Cover art (JPEG) in MP4.
ff -f lavfi -i "testsrc=size=120x120:duration=1" -frames:v 1 "$d/cover.jpg"
ff "${src[@]}" "${snd[@]}" -i "$d/cover.jpg" -map 0 -map 1 -map 2 -c:v:0 libx264 -c:a aac \
  -c:v:1 copy -disposition:v:1 attached_pic "$d/cover.mp4"
rm -f "$d/cover.jpg"
# An MP4 edit list hiding the audio before a cut at 1.4 s (stream copy from 4 s).
ff -f lavfi -i "testsrc2=size=320x180:rate=25:duration=4" -f lavfi -i "sine=duration=4" -c:v libx264 -g 50 -c:a aac "$d/long.mp4"
ff -ss 1.4 -i "$d/long.mp4" -c copy "$d/trim.mp4"
rm -f "$d/long.mp4"
# A 90-degree rotation (display matrix).
ff "${src[@]}" "${snd[@]}" -c:v libx264 -c:a aac "$d/upright.mp4"
ff -i "$d/upright.mp4" -c copy -metadata:s:v:0 rotate=90 "$d/rot90.mp4"; rm -f "$d/upright.mp4"
# iPhone-style QuickTime: HEVC with com.apple.quicktime.* keys.
ff "${src[@]}" "${snd[@]}" -c:v libx265 -x265-params log-level=none -tag:v hvc1 -c:a aac \
  -movflags use_metadata_tags -metadata com.apple.quicktime.make=Apple \
  -metadata com.apple.quicktime.model="iPhone 15 Pro" \
  -metadata com.apple.quicktime.location.ISO6709="+48.8584+002.2945+035.000/" \
  -metadata com.apple.quicktime.creationdate=2026-11-30T10:00:00+0100 "$d/iphone.mov"
# Palette pictures (PNG, pal8) in Matroska.
ff "${src[@]}" -vf "split[a][b];[a]palettegen[p];[b][p]paletteuse" -c:v png -pix_fmt pal8 "$d/pal8.mkv"
# A pixel aspect ratio only the H.264 bitstream carries (4:3).
# (Through raw H.264, which has no timestamps: without B-frames, or the MP4's are wrong.)
ff "${src[@]}" -c:v libx264 -bf 0 -bsf:v h264_metadata=sample_aspect_ratio=4/3 -f h264 "$d/sar.h264"
ff -r 25 -i "$d/sar.h264" -c copy "$d/sar_bitstream.mp4"; rm -f "$d/sar.h264"
ls -l "$d"
