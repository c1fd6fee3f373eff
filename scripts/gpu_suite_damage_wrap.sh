#!/usr/bin/env bash
# The GPU suite (without ncu, peers and the kernel benchmark), the damage corpus on NVDEC
# against the CPU, MPEG-TS files near the 33-bit clock wrap and a variable-rate video's last frame on NVDEC; on the H200 after
# the staged calls of scripts/gpu_tests.sh stage unpacked /opt/rave-dev (the corpus in
# .device/corpus: RAVE_CORPUS_DIR=$PWD/.device/corpus cargo test --release -p rave-cli --test damage_corpus).
# Usage: bash scripts/gpu_suite_damage_wrap.sh suite|damage|vfr|metadata|recent
set -uo pipefail
source /opt/rave-dev/env.sh
export PATH="/opt/rave-dev/payload:$PATH"
out="${OUT:-$(pwd)/gpu-results}"; mkdir -p "$out"
case "${1:?suite|damage|vfr|metadata|recent}" in
suite)
  RAVE_NO_NCU=1 RAVE_NO_PEERS=1 RAVE_SKIP_KERNEL_BENCH=1 bash scripts/gpu_tests.sh run > "$out/gpu_tests.log" 2>&1
  echo "gpu_tests rc $?"; grep -E "passed|failed|FAIL" "$out/gpu_tests.log" | tail -8
  ;;
damage)
  bash scripts/gpu_damage.sh .device/corpus > "$out/damage.log" 2>&1
  echo "gpu_damage rc $?"; tail -8 "$out/damage.log"
  # MPEG-TS whose timestamps all lie before the 33-bit wrap (read as negative), and one
  # crossing it: NVDEC + the default model, to Matroska and MP4.
  w=$(mktemp -d)
  for off in 95438 95441; do
    ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=3 -f lavfi -i sine=duration=3 \
      -c:v libx264 -bf 2 -g 12 -c:a aac -output_ts_offset $off "$w/w$off.ts"
    for ext in mkv mp4; do
      rave upscale -i "$w/w$off.ts" -o "$w/o$off.$ext" --device gpu --progress off > "$w/log" 2>&1
      rc=$?
      fin=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$w/w$off.ts")
      fout=$(ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$w/o$off.$ext" 2>/dev/null)
      ain=$(ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$w/w$off.ts" | grep -c .)
      aout=$(ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$w/o$off.$ext" 2>/dev/null | grep -c .)
      start=$(ffprobe -v error -show_entries format=start_time -of csv=p=0 "$w/o$off.$ext" 2>/dev/null)
      echo "wrap offset $off -> $ext: exit $rc, video frames $fin in / $fout out, audio packets $ain in / $aout out, output starts at $start s; $(grep -m1 -E 'decoder|error' "$w/log")"
    done
  done | tee "$out/before_wrap.txt"
  ;;
vfr)
  # A video that slows from 30 to 10 fps for its last second (two parts joined with the
  # concat demuxer): the output's last frame must last as long as the input's, so the
  # container's duration is the input's, on NVDEC with the default model, B-frames or not.
  w=$(mktemp -d)
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v libx264 -video_track_timescale 90000 "$w/fast.mp4"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=10:duration=1 -c:v libx264 -video_track_timescale 90000 "$w/slow.mp4"
  printf "file '%s'\nfile '%s'\n" "$w/fast.mp4" "$w/slow.mp4" > "$w/parts.txt"
  ffmpeg -v error -f concat -safe 0 -i "$w/parts.txt" -c copy "$w/in.mp4"
  dur() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }
  for extra in "" "--preset ultrafast" "--segment-frames 20"; do
    for ext in mp4 mkv; do
      rave upscale -i "$w/in.mp4" -o "$w/out.$ext" --device gpu --overwrite --progress off $extra > "$w/log" 2>&1
      echo "vfr ${extra:-default} -> $ext: exit $?, input lasts $(dur "$w/in.mp4") s, output $(dur "$w/out.$ext") s; $(grep -m1 decoder "$w/log")"
    done
  done | tee "$out/vfr_last_frame.txt"
  ;;
metadata)
  # The twelfth session's input fixes on the GPU path (NVDEC, the default model): HDR10
  # metadata only the HEVC bitstream carries, a pixel aspect ratio only WebM carries, MPEG-2
  # without B-pictures cut into segments, an MP4 whose chapters run past its media.
  w=$(mktemp -d)
  probe() { ffprobe -v error "$@"; }
  frames() { probe -count_frames -select_streams v -show_entries stream=nb_read_frames -of csv=p=0 "$1" | grep -v '^$' | head -1; }
  x265="log-level=none:keyint=12:min-keyint=12:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=2 -pix_fmt yuv420p10le -c:v libx265 -x265-params "$x265" \
    -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc "$w/hdr10.mp4"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=2 -vf setsar=4/3 -c:v libvpx-vp9 -deadline realtime -g 12 "$w/sar.webm"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=3 -f lavfi -i sine=duration=3 -c:v mpeg2video -bf 0 -g 12 -q:v 3 -c:a mp2 "$w/ip.ts"
  ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25:duration=2 -f lavfi -i sine=duration=2 -c:v libx264 -g 12 -c:a aac "$w/media.mp4"
  printf ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=A\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=5000\ntitle=B\n' > "$w/ch.txt"
  ffmpeg -v error -i "$w/media.mp4" -i "$w/ch.txt" -map 0 -map_chapters 1 -c copy "$w/chapters.mp4"
  {
    rave upscale -i "$w/hdr10.mp4" -o "$w/hdr.mkv" --device gpu --codec hevc --preset ultrafast --segment-frames 12 --progress off > "$w/log" 2>&1
    echo "hdr10 SEI-only -> hevc.mkv: exit $?, $(grep -m1 -o 'decoder[^;]*' "$w/log"); stream side data: $(probe -select_streams v -show_entries stream_side_data=max_luminance,max_content -of csv=p=0 "$w/hdr.mkv" | grep -v '^$' | tr '\n' ' '); first frame: $(probe -select_streams v -read_intervals %+#1 -show_entries frame_side_data=max_luminance,max_content -of csv=p=0 "$w/hdr.mkv" | grep -v '^$' | tr '\n' ' ')"
    rave upscale -i "$w/sar.webm" -o "$w/sar.mp4" --device gpu --segment-frames 12 --progress off > "$w/log" 2>&1
    echo "vp9 SAR 4:3 in WebM -> mp4: exit $?, in $(probe -select_streams v -show_entries stream=sample_aspect_ratio,display_aspect_ratio -of csv=p=0 "$w/sar.webm"), out $(probe -select_streams v -show_entries stream=sample_aspect_ratio,display_aspect_ratio -of csv=p=0 "$w/sar.mp4"); $(grep -m1 -o 'decoder[^;]*' "$w/log")"
    rave upscale -i "$w/ip.ts" -o "$w/ip.mkv" --device gpu --segment-frames 12 --progress off > "$w/log" 2>&1
    echo "mpeg2 I/P-only ts -> mkv: exit $?, $(grep -m1 -o 'segments: [0-9]*' "$w/log"), frames $(frames "$w/ip.ts") in / $(frames "$w/ip.mkv") out; $(grep -m1 -o 'decoder[^;]*' "$w/log")"
    rave upscale -i "$w/chapters.mp4" -o "$w/chapters.out.mp4" --device gpu --progress off > "$w/log" 2>&1
    echo "mp4 chapters past the media: exit $?, frames $(frames "$w/chapters.mp4") in / $(frames "$w/chapters.out.mp4") out, chapters $(probe -show_entries chapter=end_time -of csv=p=0 "$w/chapters.out.mp4" | grep -v '^$' | tr '\n' ' ')"
  } | tee "$out/metadata.txt"
  ;;
recent)
  # The thirteenth and fourteenth sessions' stream fixes on the GPU path, against the CPU
  # path on the same inputs (scripts/make_recent_fixtures.sh made them into .device/recent,
  # carried): closed captions, cover art, audio hidden by an edit list, rotation, iPhone
  # QuickTime keys, palette pictures, a bitstream pixel aspect ratio. Each output is
  # described (streams, frames, audio packets, caption bytes, tags) and the two compared.
  w=$(mktemp -d); in=.device/recent
  probe() { ffprobe -v error "$@"; }
  # The caption bytes (cc_data after the A/53 header) of every picture, sorted: the same
  # set in and out (the decode order differs once the encoder uses B-frames).
  captions() {
    local cc; cc=$(ffmpeg -v error -nostdin -i "$1" -map 0:v:0 -c copy -bsf:v h264_mp4toannexb -f h264 - 2>/dev/null \
      | od -An -v -tx1 | tr -s ' \n' '  ' | grep -oE '47 41 39 34 03 .. .. ([0-9a-f]{2} ){6}' | cut -d' ' -f8-13 | sort)
    echo "$(grep -c . <<< "$cc") pictures, $(sort -u <<< "$cc" | grep -c .) distinct, set $(md5sum <<< "$cc" | cut -c1-12)"
  }
  describe() {
    echo "streams: $(probe -show_entries stream=codec_type,codec_name,width,height,sample_aspect_ratio:stream_disposition=attached_pic:stream_tags=filename,mimetype -of csv=p=0 "$1" | tr '\n' ' ')"
    echo "rotation: $(probe -select_streams v:0 -show_entries stream_side_data=rotation -of csv=p=0 "$1" | grep -v '^$' | tr '\n' ' ')"
    echo "video frames: $(probe -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" | grep -v '^$' | head -1)"
    echo "audio packets: $(probe -select_streams a -show_entries packet=pts -of csv=p=0 "$1" | grep -c .)"
    echo "start $(probe -show_entries format=start_time -of csv=p=0 "$1") s, lasts $(probe -show_entries format=duration -of csv=p=0 "$1") s"
    echo "captions: $(captions "$1")"
    echo "tags: $(probe -show_entries format_tags -of compact=p=0 "$1" | tr '|' '\n' | grep -v -E 'encoder|major_brand|minor_version|compatible_brands' | sort | tr '\n' ' ')"
  }
  {
    for case in "cc.mp4 mp4" "cc.mp4 mp4 --segment-frames 20" "cover.mp4 mkv" "cover.mp4 mp4" "trim.mp4 mkv" "trim.mp4 mp4" \
                "rot90.mp4 mp4" "rot90.mp4 mkv" "iphone.mov mov" "pal8.mkv mp4" "sar_bitstream.mp4 mkv" "sar_bitstream.mp4 mp4"; do
      set -- $case; name=$1; ext=$2; shift 2
      # Each case in a folder of its own: a failed run's work folder or partial file does
      # not meet the next case.
      c=$(mktemp -d -p "$w")
      for dev in gpu cpu; do
        rave upscale -i "$in/$name" -o "$c/$dev.$ext" --device $dev --progress off "$@" > "$c/$dev.log" 2>&1
        echo "exit $?" > "$c/$dev.txt"; describe "$c/$dev.$ext" >> "$c/$dev.txt" 2>&1
      done
      echo "== $name -> $ext ${*:-} (gpu: $(grep -m1 -o 'decoder[^;,]*' "$c/gpu.log"); input captions: $(captions "$in/$name"))"
      if cmp -s "$c/gpu.txt" "$c/cpu.txt"; then echo "gpu and cpu agree:"; sed 's/^/  /' "$c/gpu.txt"
      else echo "gpu and cpu DIFFER:"; diff "$c/cpu.txt" "$c/gpu.txt" | sed 's/^/  /'; fi
      grep -h -i 'warning' "$c/gpu.log" | head -3 | sed 's/^/  gpu says: /'
    done
  } | tee "$out/recent.txt"
  rm -rf "$w"
  ;;
esac
