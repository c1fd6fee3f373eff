//! Streams FFmpeg makes of damaged FLV tags. An FLV tag says its codec, and FFmpeg's
//! demuxer opens a new stream for a tag whose codec differs from that of the stream of its
//! kind: one damaged tag header shows as a second audio (or video) stream of another codec
//! (speex, say) holding that tag's bytes. A recording whose publisher reconnected with
//! another encoder switches codec too, for good: its second stream holds many tags. So a
//! stream is a phantom where the file's tags of its codec are a handful while another
//! stream of its kind holds more: damage, not content. It is not copied, and its packets
//! count as damaged (the real stream lost them).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use ffmpeg_next::codec::Id;
use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;

/// Tags of a codec that make a stream more than a damaged tag's phantom.
const PHANTOM_TAGS: u64 = 3;

/// Whether `format` (FFmpeg's short names, e.g. "flv") is FLV.
fn is_flv(format: &str) -> bool {
    format.split(',').any(|f| f == "flv" || f == "live_flv")
}

/// The FLV codec numbers of an FFmpeg codec: (tag type, codec number) pairs.
fn flv_codes(codec: Id) -> &'static [(u8, u8)] {
    match codec {
        Id::PCM_U8 | Id::PCM_S16LE | Id::PCM_S16BE => &[(8, 0), (8, 3)],
        Id::ADPCM_SWF => &[(8, 1)],
        Id::MP3 => &[(8, 2), (8, 14)],
        Id::NELLYMOSER => &[(8, 4), (8, 5), (8, 6)],
        Id::PCM_ALAW => &[(8, 7)],
        Id::PCM_MULAW => &[(8, 8)],
        Id::AAC => &[(8, 10)],
        Id::SPEEX => &[(8, 11)],
        Id::FLV1 => &[(9, 2)],
        Id::FLASHSV => &[(9, 3)],
        Id::VP6F => &[(9, 4)],
        Id::VP6A => &[(9, 5)],
        Id::FLASHSV2 => &[(9, 6)],
        Id::H264 => &[(9, 7)],
        _ => &[],
    }
}

/// How many audio (8) and video (9) tags of each codec number the FLV at `path` holds,
/// along its chain of tags (up to where the chain breaks).
fn tag_codecs(path: &Path) -> HashMap<(u8, u8), u64> {
    let mut counts = HashMap::new();
    let Ok(mut file) = std::fs::File::open(path) else {
        return counts;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut head = [0u8; 9];
    if file.read_exact(&mut head).is_err() || &head[..3] != b"FLV" {
        return counts;
    }
    let mut pos = u64::from(u32::from_be_bytes([head[5], head[6], head[7], head[8]])) + 4;
    let mut tag = [0u8; 12];
    while pos + 12 <= len {
        if file.seek(SeekFrom::Start(pos)).is_err() || file.read_exact(&mut tag).is_err() {
            break;
        }
        let kind = tag[0] & 0x1f;
        let size = u64::from(u32::from_be_bytes([0, tag[1], tag[2], tag[3]]));
        let code = match kind {
            8 => Some(tag[11] >> 4),
            9 => Some(tag[11] & 0x0f),
            18 => None,
            _ => break,
        };
        if let Some(code) = code.filter(|_| size > 0) {
            *counts.entry((kind, code)).or_insert(0) += 1;
        }
        pos += 11 + size + 4;
    }
    counts
}

/// The streams of `input` (demuxed as `format`) made of damaged FLV tags: in an FLV, an
/// audio stream, or a video stream other than the main one (`video`), whose codec's tags
/// number a handful while another stream of its kind has more.
pub fn phantom_streams(input: &Input, format: &str, video: usize) -> Vec<usize> {
    // Only where a kind has two streams or more (the walk of the tags reads the file).
    let of_kind = |kind: Type| {
        input
            .streams()
            .filter(|s| s.parameters().medium() == kind)
            .count()
    };
    if !is_flv(format) || (of_kind(Type::Audio) < 2 && of_kind(Type::Video) < 2) {
        return Vec::new();
    }
    let Some(path) = crate::sys::input_path(input) else {
        return Vec::new();
    };
    let counts = tag_codecs(&path);
    let tags = |codec: Id| -> Option<u64> {
        let codes = flv_codes(codec);
        (!codes.is_empty()).then(|| {
            codes
                .iter()
                .map(|c| counts.get(c).copied().unwrap_or(0))
                .sum()
        })
    };
    let streams: Vec<(usize, Type, Option<u64>)> = input
        .streams()
        .filter(|s| is_av(s.parameters().medium()))
        .map(|s| {
            (
                s.index(),
                s.parameters().medium(),
                tags(s.parameters().id()),
            )
        })
        .collect();
    streams
        .iter()
        .filter(|&&(index, kind, count)| {
            let few = count.is_none_or(|n| n <= PHANTOM_TAGS);
            let more_elsewhere = streams.iter().any(|&(other, k, n)| {
                other != index && k == kind && n.unwrap_or(0) > count.unwrap_or(0)
            });
            index != video && few && more_elsewhere
        })
        .map(|&(index, ..)| index)
        .collect()
}

fn is_av(kind: Type) -> bool {
    matches!(kind, Type::Audio | Type::Video)
}

/// Why a phantom stream is left out, after its description ("stream #2 (audio speex)").
pub const LEFT_OUT: &str = "made by FFmpeg of a damaged FLV tag (a handful of tags name its codec, another stream of its kind holds the rest): left out, its packets counted as damage";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flv_is_told_by_the_demuxers_names() {
        assert!(is_flv("flv"));
        assert!(is_flv("live_flv"));
        assert!(!is_flv("matroska,webm"));
        assert!(!is_flv("mov,mp4,m4a,3gp,3g2,mj2"));
    }

    #[test]
    fn codecs_map_to_the_flv_numbers_their_tags_carry() {
        assert_eq!(flv_codes(Id::AAC), &[(8, 10)]);
        assert_eq!(flv_codes(Id::SPEEX), &[(8, 11)]);
        assert_eq!(flv_codes(Id::H264), &[(9, 7)]);
        assert!(flv_codes(Id::OPUS).is_empty());
    }
}
