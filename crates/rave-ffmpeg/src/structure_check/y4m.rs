//! YUV4MPEG2 (`.y4m`): after the stream header every frame is `FRAME` (with optional
//! parameters) and a line end, then the picture's planes, of one size the header fixes.
//! FFmpeg's demuxer drops a last frame the file cuts short without a word.

use std::io::{Read, Seek, SeekFrom};

use super::{StructureProblem, padding_to_end, read_up_to};

/// The longest header or frame-header line read (parameters included).
const MAX_LINE: usize = 4096;

/// Y4M: every frame whole, each starting with `FRAME`. A header RAVE cannot size (a colour
/// space it does not know) is left unchecked.
pub fn check_y4m(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    let (header_end, header) = line_at(r, 0, len)?;
    let frame_bytes = picture_bytes(&header)?;
    let mut pos = header_end;
    let mut frame = 0u64;
    while pos < len {
        // Zeros or line ends after the last whole frame: padding, no frame.
        if padding_to_end(r, pos, len, |b| matches!(b, 0 | b'\n' | b'\r'))? {
            return None;
        }
        let Some((data_at, line)) = line_at(r, pos, len) else {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: it ends inside the header of frame {frame} at byte {pos}"
            )));
        };
        if !line.starts_with("FRAME") {
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where frame {frame} should start (with FRAME)"
            )));
        }
        let left = len - data_at;
        if left < frame_bytes {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: frame {frame} at byte {pos} needs {frame_bytes} bytes of picture, only {left} are there"
            )));
        }
        pos = data_at + frame_bytes;
        frame += 1;
    }
    None
}

/// The line at `pos` (up to its `\n`, without it) and where the byte after it is; `None`
/// where no line end comes within [`MAX_LINE`] bytes or before the file ends.
fn line_at(r: &mut (impl Read + Seek), pos: u64, len: u64) -> Option<(u64, String)> {
    r.seek(SeekFrom::Start(pos)).ok()?;
    let mut buf = vec![0u8; MAX_LINE.min((len - pos) as usize)];
    let got = read_up_to(r, &mut buf)?;
    let end = buf[..got].iter().position(|&b| b == b'\n')?;
    Some((
        pos + end as u64 + 1,
        String::from_utf8_lossy(&buf[..end])
            .trim_end_matches('\r')
            .to_owned(),
    ))
}

/// The bytes of one picture a stream header (`YUV4MPEG2 W320 H240 ... C420jpeg`) gives:
/// its planes at its colour space's subsampling and depth: the `C` tag's, else the
/// `XYSCSS=` comment's (as FFmpeg reads old mjpegtools files), else 8-bit 4:2:0. A colour
/// space outside the ones FFmpeg names exactly gives `None` (the file is left unchecked).
fn picture_bytes(header: &str) -> Option<u64> {
    let mut words = header.split_whitespace();
    if words.next()? != "YUV4MPEG2" {
        return None;
    }
    let (mut w, mut h, mut colour, mut comment) = (None, None, None, None);
    for word in words {
        match word.split_at_checked(1)? {
            ("W", v) => w = v.parse::<u64>().ok(),
            ("H", v) => h = v.parse::<u64>().ok(),
            ("C", v) => colour = Some(v.to_owned()),
            ("X", v) => {
                if let Some(named) = v.strip_prefix("YSCSS=") {
                    comment = Some(named.to_ascii_lowercase());
                }
            }
            _ => {}
        }
    }
    let colour = colour.or(comment).unwrap_or_else(|| "420jpeg".into());
    let (w, h) = (w.filter(|&w| w > 0)?, h.filter(|&h| h > 0)?);
    // The subsampling, then the depth after a `p` (420p10, 444p16) or in `mono16`.
    let (layout, bits) = match colour.split_once('p') {
        Some((layout @ ("420" | "422" | "444"), bits))
            if !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (layout, bits.parse::<u64>().ok()?)
        }
        _ => match colour.strip_prefix("mono") {
            Some("") => ("mono", 8),
            Some(bits) => ("mono", bits.parse::<u64>().ok()?),
            None => (colour.as_str(), 8),
        },
    };
    if !(8..=16).contains(&bits) {
        return None;
    }
    let luma = w * h;
    let chroma = |cw: u64, ch: u64| 2 * w.div_ceil(cw) * h.div_ceil(ch);
    let samples = match layout {
        "420jpeg" | "420paldv" | "420mpeg2" | "420" => luma + chroma(2, 2),
        "422" => luma + chroma(2, 1),
        "411" => luma + chroma(4, 1),
        "444" => luma + chroma(1, 1),
        "444alpha" => 2 * luma + chroma(1, 1),
        "mono" => luma,
        _ => return None,
    };
    let bytes_per_sample = if bits > 8 { 2 } else { 1 };
    Some(samples * bytes_per_sample)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn y4m(header: &str, frames: usize, picture: usize) -> Vec<u8> {
        let mut file = format!("{header}\n").into_bytes();
        for _ in 0..frames {
            file.extend(b"FRAME\n");
            file.extend(vec![0x80u8; picture]);
        }
        file
    }

    fn check(d: &[u8]) -> Option<StructureProblem> {
        check_y4m(&mut Cursor::new(d), d.len() as u64)
    }

    #[test]
    fn every_frame_must_be_whole() {
        // 5x3 4:2:0: 15 + 2 x 3 x 2 = 27 bytes a picture.
        let file = y4m(
            "YUV4MPEG2 W5 H3 F25:1 Ip A1:1 C420jpeg XYSCSS=420JPEG",
            4,
            27,
        );
        assert_eq!(check(&file), None);
        let p = check(&file[..file.len() - 1]).expect("cut in the last picture");
        assert!(p.truncated, "{p:?}");
        assert!(
            p.text.contains("frame 3 at byte")
                && p.text.contains("needs 27 bytes of picture, only 26"),
            "{}",
            p.text
        );
        let p = check(&file[..file.len() - 30]).expect("cut in a frame header");
        assert!(
            p.text.contains("inside the header of frame 3"),
            "{}",
            p.text
        );
        // Zeros or line ends after the last frame are padding.
        let padded = [file.clone(), vec![0, 0, b'\n']].concat();
        assert_eq!(check(&padded), None);
        let crlf = y4m("YUV4MPEG2 W5 H3 F25:1\r", 2, 27);
        assert_eq!(check(&crlf), None);
        let mut broken = file.clone();
        let second = 54 + 6 + 27;
        broken[second] = b'X';
        assert!(
            check(&broken)
                .unwrap()
                .text
                .contains("where frame 1 should start")
        );
    }

    #[test]
    fn picture_sizes_follow_the_colour_space() {
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 F25:1"), Some(8 + 4));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C422"), Some(8 + 8));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C420paldv"), Some(12));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C420mpeg2"), Some(12));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C444p10"), Some(2 * 24));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 Cmono"), Some(8));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 Cmono16"), Some(16));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C444alpha"), Some(32));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 Cunknown"), None);
        assert_eq!(picture_bytes("NOTY4M W4 H2"), None);
        // Without a C tag, the mjpegtools comment; spaces doubled and a CR are no matter.
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 XYSCSS=444"), Some(24));
        assert_eq!(picture_bytes("YUV4MPEG2  W4 H2 XYSCSS=420P10 "), Some(24));
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C422 XYSCSS=444"), Some(16));
        // Not a colour space FFmpeg names exactly: unchecked.
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C411p10"), None);
        assert_eq!(picture_bytes("YUV4MPEG2 W4 H2 C420p"), None);
    }
}
