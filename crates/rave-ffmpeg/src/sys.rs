//! The few FFmpeg calls `ffmpeg-next` does not wrap: colour names, display-matrix rotation,
//! stream side data copy, container/codec compatibility and raw context fields.

use std::ffi::CStr;

use ffmpeg_next::ffi;
use ffmpeg_next::format::context::{Input, Output};

/// FFmpeg's name for a colour property value, or "unknown".
fn name_or_unknown(ptr: *const std::os::raw::c_char) -> String {
    if ptr.is_null() {
        return "unknown".into();
    }
    // SAFETY: FFmpeg's *_name functions return null or a pointer to a static NUL-terminated
    // string that lives for the whole process.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// Names of a stream's colour primaries, transfer, matrix and range.
pub fn color_names(params: &ffi::AVCodecParameters) -> [String; 4] {
    // SAFETY: the *_name functions accept any enum value and return null for unknown ones.
    unsafe {
        [
            name_or_unknown(ffi::av_color_primaries_name(params.color_primaries)),
            name_or_unknown(ffi::av_color_transfer_name(params.color_trc)),
            name_or_unknown(ffi::av_color_space_name(params.color_space)),
            name_or_unknown(ffi::av_color_range_name(params.color_range)),
        ]
    }
}

/// Raw codec parameters of input stream `index`.
pub fn stream_params(input: &Input, index: usize) -> &ffi::AVCodecParameters {
    // SAFETY: `index` comes from iterating this context's streams, so the stream pointer
    // is valid, and every demuxed stream has allocated codec parameters; the borrow is tied
    // to `input`, which owns them.
    unsafe { &*(*(*(*input.as_ptr()).streams.add(index))).codecpar }
}

/// The display-matrix side data of input stream `index`, if any (9 x i32).
pub fn display_matrix(input: &Input, index: usize) -> Option<[i32; 9]> {
    // SAFETY: stream pointer valid as in `stream_params`; av_stream_get_side_data returns
    // null or a pointer to `size` bytes owned by the stream.
    unsafe {
        let stream = *(*input.as_ptr()).streams.add(index);
        let mut size: usize = 0;
        let data = ffi::av_stream_get_side_data(
            stream,
            ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
            &mut size,
        );
        if data.is_null() || size < 36 {
            return None;
        }
        let mut m = [0i32; 9];
        std::ptr::copy_nonoverlapping(data as *const i32, m.as_mut_ptr(), 9);
        Some(m)
    }
}

/// Rotation in degrees (counter-clockwise, as FFmpeg reports it) of a display matrix.
pub fn rotation_degrees(matrix: &[i32; 9]) -> f64 {
    // SAFETY: av_display_rotation_get reads exactly 9 i32 values from the pointer.
    let r = unsafe { ffi::av_display_rotation_get(matrix.as_ptr()) };
    if r.is_nan() { 0.0 } else { r }
}

/// Attach a display matrix to output stream `index` (before the header is written).
pub fn set_display_matrix(output: &mut Output, index: usize, matrix: &[i32; 9]) -> bool {
    // SAFETY: the stream index was returned by add_stream on this context; the buffer from
    // av_stream_new_side_data has room for the 36 bytes we copy, and is owned by the stream.
    unsafe {
        let stream = *(*output.as_mut_ptr()).streams.add(index);
        let dst = ffi::av_stream_new_side_data(
            stream,
            ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
            36,
        );
        if dst.is_null() {
            return false;
        }
        std::ptr::copy_nonoverlapping(matrix.as_ptr() as *const u8, dst, 36);
        true
    }
}

/// Copy the disposition flags of an input stream to an output stream.
pub fn copy_disposition(input: &Input, in_index: usize, output: &mut Output, out_index: usize) {
    // SAFETY: both indices are valid streams of their contexts (see callers).
    unsafe {
        let src = *(*input.as_ptr()).streams.add(in_index);
        let dst = *(*output.as_mut_ptr()).streams.add(out_index);
        (*dst).disposition = (*src).disposition;
    }
}

/// Whether the output container can store `codec` (FFmpeg's own compliance check). Unknown
/// answers count as yes: the muxer will then say no itself.
pub fn container_accepts(output: &Output, codec: ffi::AVCodecID) -> bool {
    // SAFETY: the output context's oformat is set by avformat_alloc_output_context2.
    let r = unsafe {
        ffi::avformat_query_codec((*output.as_ptr()).oformat, codec, ffi::FF_COMPLIANCE_NORMAL)
    };
    r != 0
}

/// Whether the output format wants codec extradata in the container (MP4, MKV).
pub fn wants_global_header(output: &Output) -> bool {
    // SAFETY: oformat is set for every output context.
    unsafe { ((*(*output.as_ptr()).oformat).flags & ffi::AVFMT_GLOBALHEADER) != 0 }
}

/// Colour fields copied from the source to the encoder so the output is tagged like the input.
#[derive(Debug, Clone, Copy)]
pub struct RawColor {
    /// AVColorPrimaries.
    pub primaries: ffi::AVColorPrimaries,
    /// AVColorTransferCharacteristic.
    pub transfer: ffi::AVColorTransferCharacteristic,
    /// AVColorSpace.
    pub space: ffi::AVColorSpace,
    /// AVColorRange.
    pub range: ffi::AVColorRange,
    /// AVChromaLocation.
    pub chroma_location: ffi::AVChromaLocation,
}

impl RawColor {
    /// Read the colour fields of codec parameters.
    pub fn from_params(p: &ffi::AVCodecParameters) -> Self {
        Self {
            primaries: p.color_primaries,
            transfer: p.color_trc,
            space: p.color_space,
            range: p.color_range,
            chroma_location: p.chroma_location,
        }
    }
}

/// Set colour tags, the global-header flag and the sample aspect ratio on an encoder
/// context before it is opened.
pub fn prepare_encoder(
    ctx: *mut ffi::AVCodecContext,
    color: &RawColor,
    global_header: bool,
    sample_aspect: ffi::AVRational,
) {
    // SAFETY: `ctx` is a freshly allocated, not yet opened codec context owned by the caller;
    // these are plain fields the encoder reads at open time.
    unsafe {
        (*ctx).color_primaries = color.primaries;
        (*ctx).color_trc = color.transfer;
        (*ctx).colorspace = color.space;
        (*ctx).color_range = color.range;
        (*ctx).chroma_sample_location = color.chroma_location;
        (*ctx).sample_aspect_ratio = sample_aspect;
        if global_header {
            (*ctx).flags |= ffi::AV_CODEC_FLAG_GLOBAL_HEADER as i32;
        }
    }
}

/// Decode-error and corrupt flags of a decoded frame: nonzero means the decoder concealed
/// damage in it.
pub fn frame_is_damaged(frame: *const ffi::AVFrame) -> bool {
    // SAFETY: `frame` points to a frame just filled by avcodec_receive_frame.
    unsafe {
        (*frame).decode_error_flags != 0 || ((*frame).flags & ffi::AV_FRAME_FLAG_CORRUPT) != 0
    }
}

/// Bits per sample of the first component of a pixel format, if FFmpeg knows the format.
pub fn pixel_bit_depth(format: ffi::AVPixelFormat) -> Option<u8> {
    // SAFETY: av_pix_fmt_desc_get returns null or a pointer to a static descriptor.
    let desc = unsafe { ffi::av_pix_fmt_desc_get(format) };
    if desc.is_null() {
        return None;
    }
    // SAFETY: non-null descriptors are static and comp[0] always exists.
    Some(unsafe { (*desc).comp[0].depth } as u8)
}

/// Set the codec tag of output stream `index` (0 lets the muxer choose).
pub fn set_codec_tag(output: &mut Output, index: usize, tag: u32) {
    // SAFETY: the stream index was returned by add_stream on this context and every stream
    // has allocated codec parameters.
    unsafe {
        let stream = *(*output.as_mut_ptr()).streams.add(index);
        (*(*stream).codecpar).codec_tag = tag;
    }
}

/// Opus pre-skip of input stream `index`, in 48 kHz samples: the codec parameters'
/// initial padding, else the `OpusHead` field in the extradata.
pub fn opus_pre_skip(input: &Input, index: usize) -> i64 {
    let p = stream_params(input, index);
    if p.initial_padding > 0 {
        return i64::from(p.initial_padding);
    }
    if p.extradata.is_null() || p.extradata_size < 12 {
        return 0;
    }
    // SAFETY: extradata is non-null and holds extradata_size (>= 12) bytes owned by the stream.
    let head = unsafe { std::slice::from_raw_parts(p.extradata, 12) };
    if &head[..8] != b"OpusHead" {
        return 0;
    }
    i64::from(u16::from_le_bytes([head[10], head[11]]))
}

/// Whether the input's durations come from its container headers (rather than being
/// estimated from the timestamps at the end of the file or from the bit rate).
pub fn durations_are_declared(input: &Input) -> bool {
    // SAFETY: the input context is valid for the borrow; the field is a plain enum.
    let method = unsafe { (*input.as_ptr()).duration_estimation_method };
    method == ffi::AVDurationEstimationMethod::AVFMT_DURATION_FROM_STREAM
}

/// Entries in the demuxer's index of input stream `index` (for MP4, every sample it will
/// return, after edit lists are applied).
pub fn index_entries(input: &Input, index: usize) -> u64 {
    // SAFETY: stream pointer valid as in `stream_params`; the call only reads the stream.
    let n = unsafe { ffi::avformat_index_get_entries_count(*(*input.as_ptr()).streams.add(index)) };
    u64::try_from(n).unwrap_or(0)
}

/// The input's start time in microseconds (FFmpeg's AV_NOPTS_VALUE, i64::MIN, if unknown).
pub fn format_start_time(input: &Input) -> i64 {
    // SAFETY: the input context is valid for the borrow; the field is a plain integer.
    unsafe { (*input.as_ptr()).start_time }
}
