//! What the output keeps of the input video stream's own metadata (rotation, HDR10
//! mastering display and content light level, from the container or else the bitstream) and
//! what it cannot keep, said once.

use ffmpeg_next::ffi::{AVFieldOrder, AVPacketSideDataType};
use ffmpeg_next::format::context::{Input, Output};

use crate::codec_choice::{Container, VideoCodec};
use crate::sys::{self, MasteringDisplay};

/// The display matrix of an unrotated, unflipped picture.
const IDENTITY: [i32; 9] = [1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30];

/// The input video's metadata as the output will carry it.
#[derive(Debug, Default)]
pub struct CarriedMetadata {
    /// Display matrix (rotation/flip) to store, where the container can.
    display_matrix: Option<[i32; 9]>,
    /// The input video's frame size: the matrix's translation is in its pixels.
    source_size: (i32, i32),
    /// Mastering-display side data, as the input stream (or its first frame) holds it.
    mastering: Option<Vec<u8>>,
    /// Content-light-level side data, as the input stream (or its first frame) holds it.
    light: Option<Vec<u8>>,
    /// What the output cannot keep, one sentence each.
    pub warnings: Vec<String>,
}

impl CarriedMetadata {
    /// Read what video stream `index` of `input` carries and decide what `container` keeps.
    pub fn of(input: &Input, index: usize, container: Container) -> Self {
        let mut carried = CarriedMetadata {
            mastering: sys::stream_side_data(
                input,
                index,
                AVPacketSideDataType::AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
            ),
            light: sys::stream_side_data(
                input,
                index,
                AVPacketSideDataType::AV_PKT_DATA_CONTENT_LIGHT_LEVEL,
            ),
            source_size: {
                let p = sys::stream_params(input, index);
                (p.width, p.height)
            },
            ..Default::default()
        };
        // Most HDR10 files hold it in the bitstream only (x265's SEI): read it there.
        if carried.mastering.is_none() && carried.light.is_none() {
            let hdr = crate::bitstream_hdr::first_frame_hdr(input, index);
            carried.mastering = hdr.mastering;
            carried.light = hdr.light;
        }
        if let Some(matrix) = sys::display_matrix(input, index).filter(|m| *m != IDENTITY) {
            if stores_display_matrix(container) {
                carried.display_matrix = Some(matrix);
            } else {
                carried.warnings.push(format!(
                    "{} cannot be stored in {} by this FFmpeg; write .mp4 or .mov to keep it",
                    describe_matrix(&matrix),
                    container.label()
                ));
            }
        }
        if let Some(what) = crate::alpha::alpha_of(input, index) {
            carried.warnings.push(format!(
                "the input has an alpha channel ({what}); RAVE upscales the colour only and writes video without transparency"
            ));
        }
        if let Some(order) = field_order(sys::stream_params(input, index).field_order) {
            carried.warnings.push(interlace_warning(order));
        }
        carried
    }

    /// Attach what the container keeps to output stream `index` (before its header).
    pub fn apply(&self, output: &mut Output, index: usize) {
        if let Some(matrix) = &self.display_matrix {
            let matrix =
                scaled_translation(matrix, self.source_size, sys::frame_size(output, index));
            let bytes: Vec<u8> = matrix.iter().flat_map(|v| v.to_ne_bytes()).collect();
            sys::set_stream_side_data(
                output,
                index,
                AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
                &bytes,
            );
        }
        for (kind, data) in [
            (
                AVPacketSideDataType::AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
                &self.mastering,
            ),
            (
                AVPacketSideDataType::AV_PKT_DATA_CONTENT_LIGHT_LEVEL,
                &self.light,
            ),
        ] {
            if let Some(data) = data {
                sys::set_stream_side_data(output, index, kind, data);
            }
        }
    }

    /// The encoder's own parameters (`key=value`, for x265-params / svtav1-params) that put
    /// the HDR10 metadata into the bitstream too (SEI in HEVC, metadata OBUs in AV1); x264
    /// has none, so H.264 output carries it in the container only.
    pub fn encoder_params(&self, codec: VideoCodec) -> Vec<String> {
        let mastering = self
            .mastering
            .as_deref()
            .and_then(sys::parse_mastering_display)
            .filter(|m| m.has_primaries != 0 && m.has_luminance != 0);
        let light = self.light.as_deref().and_then(sys::parse_content_light);
        let mut params = Vec::new();
        match codec {
            VideoCodec::Hevc => {
                if let Some(m) = mastering {
                    params.push(format!("master-display={}", x265_master_display(&m)));
                }
                if let Some(l) = light {
                    params.push(format!("max-cll={},{}", l.max_cll, l.max_fall));
                }
            }
            VideoCodec::Av1 => {
                if let Some(m) = mastering {
                    params.push(format!("mastering-display={}", svt_mastering_display(&m)));
                }
                if let Some(l) = light {
                    params.push(format!("content-light={},{}", l.max_cll, l.max_fall));
                }
            }
            VideoCodec::H264 => {}
        }
        params
    }
}

/// `matrix` with its translation (the offset that brings a rotated picture back into view,
/// in pixels of a `from`-sized frame: an iPhone's 90° matrix moves it by the height) for the
/// picture upscaled to `to` (both sides scaled alike): Apple's players apply the whole
/// matrix, so an offset left in the input's pixels would place the upscaled picture partly
/// out of view.
fn scaled_translation(matrix: &[i32; 9], from: (i32, i32), to: (i32, i32)) -> [i32; 9] {
    let mut out = *matrix;
    if from.0 <= 0 || to.0 <= 0 {
        return out;
    }
    for at in [6, 7] {
        let scaled = i64::from(matrix[at]) * i64::from(to.0) / i64::from(from.0);
        out[at] = scaled.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
    }
    out
}

/// Whether FFmpeg 5.1's muxer writes a stream's display matrix: MP4 and QuickTime do (tkhd
/// matrix); its Matroska muxer writes no rotation at all (and its demuxer ignores a
/// rectangular projection's roll), so there is nowhere to put it.
fn stores_display_matrix(container: Container) -> bool {
    container != Container::Matroska
}

/// "rotation 90°" (as `rave probe` reports it), or "a mirrored display matrix".
fn describe_matrix(matrix: &[i32; 9]) -> String {
    let determinant =
        i64::from(matrix[0]) * i64::from(matrix[4]) - i64::from(matrix[1]) * i64::from(matrix[3]);
    if determinant < 0 {
        return "a mirrored display matrix".into();
    }
    let degrees = (sys::rotation_degrees(matrix) * 100.0).round() / 100.0;
    if degrees == 0.0 {
        // Not a rotation: a matrix that scales or moves the picture (or a damaged header).
        return "a display matrix that scales or moves the picture".into();
    }
    format!(
        "rotation {}°",
        if degrees == -180.0 { 180.0 } else { degrees }
    )
}

/// The warning for interlaced input whose field order is `order` ("top field first", or
/// "seen in its frames" when the stream does not declare it).
pub fn interlace_warning(order: &str) -> String {
    format!(
        "the input is interlaced ({order}); RAVE upscales whole frames and writes progressive video; deinterlace first for best results (e.g. ffmpeg -vf bwdif)"
    )
}

/// The display field order of an interlaced stream; `None` for progressive or unknown.
fn field_order(order: AVFieldOrder) -> Option<&'static str> {
    match order {
        AVFieldOrder::AV_FIELD_TT | AVFieldOrder::AV_FIELD_BT => Some("top field first"),
        AVFieldOrder::AV_FIELD_BB | AVFieldOrder::AV_FIELD_TB => Some("bottom field first"),
        _ => None,
    }
}

fn value(r: ffmpeg_next::ffi::AVRational) -> f64 {
    if r.den == 0 {
        0.0
    } else {
        f64::from(r.num) / f64::from(r.den)
    }
}

/// FFmpeg orders primaries R, G, B; the SEI strings list G, B, R.
const GBR: [usize; 3] = [1, 2, 0];

/// x265's `G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)`: chromaticity in 0.00002 units, luminance
/// in 0.0001 cd/m².
fn x265_master_display(m: &MasteringDisplay) -> String {
    let xy = |p: &[ffmpeg_next::ffi::AVRational; 2]| {
        format!(
            "{},{}",
            (value(p[0]) * 50000.0).round(),
            (value(p[1]) * 50000.0).round()
        )
    };
    format!(
        "G({})B({})R({})WP({})L({},{})",
        xy(&m.display_primaries[GBR[0]]),
        xy(&m.display_primaries[GBR[1]]),
        xy(&m.display_primaries[GBR[2]]),
        xy(&m.white_point),
        (value(m.max_luminance) * 10000.0).round(),
        (value(m.min_luminance) * 10000.0).round()
    )
}

/// SVT-AV1's `G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)` in plain numbers.
fn svt_mastering_display(m: &MasteringDisplay) -> String {
    let xy =
        |p: &[ffmpeg_next::ffi::AVRational; 2]| format!("{:.4},{:.4}", value(p[0]), value(p[1]));
    format!(
        "G({})B({})R({})WP({})L({:.4},{:.4})",
        xy(&m.display_primaries[GBR[0]]),
        xy(&m.display_primaries[GBR[1]]),
        xy(&m.display_primaries[GBR[2]]),
        xy(&m.white_point),
        value(m.max_luminance),
        value(m.min_luminance)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ffmpeg_next::ffi::AVRational;

    fn r(num: i32, den: i32) -> AVRational {
        AVRational { num, den }
    }

    fn bt2020_1000_nits() -> MasteringDisplay {
        MasteringDisplay {
            display_primaries: [
                [r(35400, 50000), r(14600, 50000)],
                [r(8500, 50000), r(39850, 50000)],
                [r(6550, 50000), r(2300, 50000)],
            ],
            white_point: [r(15635, 50000), r(16450, 50000)],
            min_luminance: r(50, 10000),
            max_luminance: r(1000, 1),
            has_primaries: 1,
            has_luminance: 1,
        }
    }

    #[test]
    fn hdr10_becomes_the_encoders_sei_strings() {
        let m = bt2020_1000_nits();
        assert_eq!(
            x265_master_display(&m),
            "G(8500,39850)B(6550,2300)R(35400,14600)WP(15635,16450)L(10000000,50)"
        );
        assert_eq!(
            svt_mastering_display(&m),
            "G(0.1700,0.7970)B(0.1310,0.0460)R(0.7080,0.2920)WP(0.3127,0.3290)L(1000.0000,0.0050)"
        );
    }

    #[test]
    fn matroska_cannot_keep_a_rotation() {
        assert!(stores_display_matrix(Container::Mp4) && stores_display_matrix(Container::Mov));
        assert!(!stores_display_matrix(Container::Matroska));
        // A quarter turn, as `-metadata:s:v rotate=90` writes it.
        let quarter = [0, 1 << 16, 0, -(1 << 16), 0, 0, 0, 0, 1 << 30];
        let text = describe_matrix(&quarter);
        assert!(text == "rotation 90°" || text == "rotation -90°", "{text}");
        let mirrored = [-(1 << 16), 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30];
        assert_eq!(describe_matrix(&mirrored), "a mirrored display matrix");
        let half = [-(1 << 16), 0, 0, 0, -(1 << 16), 0, 0, 0, 1 << 30];
        assert_eq!(describe_matrix(&half), "rotation 180°");
        // Damaged header bits or a scaled picture: no "rotation 0°".
        let scaled = [2 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30];
        let text = describe_matrix(&scaled);
        assert_eq!(text, "a display matrix that scales or moves the picture");
        assert_eq!(field_order(AVFieldOrder::AV_FIELD_PROGRESSIVE), None);
        assert_eq!(field_order(AVFieldOrder::AV_FIELD_UNKNOWN), None);
        assert_eq!(
            field_order(AVFieldOrder::AV_FIELD_TT),
            Some("top field first")
        );
    }
}
