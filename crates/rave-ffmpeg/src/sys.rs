//! The few FFmpeg calls `ffmpeg-next` does not wrap: colour names, stream side data
//! (display matrix, HDR10), muxer dry runs, swscale colour details and raw context fields.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

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

/// Input stream `index` of `input`; an index the context does not have panics (a caller's
/// bug) instead of reading past the stream array.
pub(crate) fn input_stream(input: &Input, index: usize) -> *mut ffi::AVStream {
    // SAFETY: the context is open for the borrow: `streams` holds `nb_streams` valid stream
    // pointers, and `index` is checked against that count before the read.
    unsafe {
        let ctx = input.as_ptr();
        assert!(
            index < (*ctx).nb_streams as usize,
            "input has no stream {index}"
        );
        *(*ctx).streams.add(index)
    }
}

/// Output stream `index` of `output`; an index the context does not have panics.
pub(crate) fn output_stream(output: &mut Output, index: usize) -> *mut ffi::AVStream {
    // SAFETY: as in `input_stream`, for the output context borrowed mutably.
    unsafe {
        let ctx = output.as_mut_ptr();
        assert!(
            index < (*ctx).nb_streams as usize,
            "output has no stream {index}"
        );
        *(*ctx).streams.add(index)
    }
}

/// The frame size (width, height) set on output stream `index`'s codec parameters.
pub fn frame_size(output: &mut Output, index: usize) -> (i32, i32) {
    // SAFETY: the stream is valid (`output_stream`) and has allocated codec parameters
    // (avformat_new_stream); they are only read.
    unsafe {
        let params = (*output_stream(output, index)).codecpar;
        ((*params).width, (*params).height)
    }
}

/// Raw codec parameters of input stream `index`.
pub fn stream_params(input: &Input, index: usize) -> &ffi::AVCodecParameters {
    // SAFETY: the stream is valid (`input_stream`) and every demuxed stream has allocated
    // codec parameters; the borrow is tied to `input`, which owns them.
    unsafe { &*(*input_stream(input, index)).codecpar }
}

/// The pixel aspect ratio of input stream `index` as FFmpeg's tools take it: the
/// container's (a WebM or MOV `pasp`, a Matroska display size) over the bitstream's, which
/// many codecs (VP9, FFV1, ProRes, raw) do not carry; 0/1 when neither says.
pub fn sample_aspect_ratio(input: &Input, index: usize) -> ffmpeg_next::Rational {
    let stream = input_stream(input, index);
    // SAFETY: context and stream are valid for the borrow; av_guess_sample_aspect_ratio
    // only reads the context, the stream and (null here) the frame.
    let sar =
        unsafe { ffi::av_guess_sample_aspect_ratio(input.as_ptr() as *mut _, stream, null_mut()) };
    ffmpeg_next::Rational::new(sar.num, sar.den.max(1))
}

/// Set output stream `index`'s pixel aspect ratio, on the stream and in its codec
/// parameters alike: MP4/MOV write the parameters' (`pasp`), Matroska the stream's (as a
/// display size), and FFmpeg refuses a header where the two disagree.
pub fn set_sample_aspect_ratio(output: &mut Output, index: usize, sar: ffmpeg_next::Rational) {
    let stream = output_stream(output, index);
    // SAFETY: the stream is valid for the borrow and has allocated codec parameters; both
    // fields are plain values.
    unsafe {
        (*stream).sample_aspect_ratio = sar.into();
        (*(*stream).codecpar).sample_aspect_ratio = sar.into();
    }
}

/// The palette of a decoded PAL8 frame (256 entries of native-endian 0xAARRGGBB), which
/// `ffmpeg-next`'s plane accessors do not reach; `None` for a frame without one.
pub fn palette(frame: &ffmpeg_next::frame::Video) -> Option<&[u8]> {
    // SAFETY: the frame is valid for the borrow; for a palette format FFmpeg's decoders put
    // an AVPALETTE_SIZE (1024) byte palette in data[1], owned by the frame, which the
    // returned slice borrows. The format is checked first, so no other plane is read.
    unsafe {
        let raw = frame.as_ptr();
        if (*raw).format != ffi::AVPixelFormat::AV_PIX_FMT_PAL8 as i32 || (*raw).data[1].is_null() {
            return None;
        }
        Some(std::slice::from_raw_parts(
            (*raw).data[1],
            ffi::AVPALETTE_SIZE as usize,
        ))
    }
}

/// The path `input` was opened from.
pub fn input_path(input: &Input) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: the context is open; its `url` is null or the NUL-terminated name it was
    // opened with, owned by the context and copied out before returning.
    unsafe {
        let url = (*input.as_ptr()).url;
        if url.is_null() {
            return None;
        }
        let bytes = std::ffi::CStr::from_ptr(url).to_bytes();
        Some(std::ffi::OsStr::from_bytes(bytes).into())
    }
}

/// The side data of kind `kind` attached to input stream `index`, if any.
pub fn stream_side_data(
    input: &Input,
    index: usize,
    kind: ffi::AVPacketSideDataType,
) -> Option<Vec<u8>> {
    let stream = input_stream(input, index);
    // SAFETY: the stream is valid for the borrow; av_stream_get_side_data returns null or a
    // pointer to `size` bytes owned by the stream, copied out before returning.
    unsafe {
        let mut size: usize = 0;
        let data = ffi::av_stream_get_side_data(stream, kind, &mut size);
        if data.is_null() || size == 0 {
            return None;
        }
        Some(std::slice::from_raw_parts(data, size).to_vec())
    }
}

/// Attach side data of kind `kind` to output stream `index` (before the header is written).
pub fn set_stream_side_data(
    output: &mut Output,
    index: usize,
    kind: ffi::AVPacketSideDataType,
    data: &[u8],
) -> bool {
    let stream = output_stream(output, index);
    // SAFETY: the stream is valid for the borrow; the buffer from av_stream_new_side_data
    // has room for `data.len()` bytes and is owned by the stream.
    unsafe {
        let dst = ffi::av_stream_new_side_data(stream, kind, data.len());
        if dst.is_null() {
            return false;
        }
        std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
        true
    }
}

/// The display-matrix side data of input stream `index`, if any (9 x i32).
pub fn display_matrix(input: &Input, index: usize) -> Option<[i32; 9]> {
    let bytes = stream_side_data(
        input,
        index,
        ffi::AVPacketSideDataType::AV_PKT_DATA_DISPLAYMATRIX,
    )?;
    let mut m = [0i32; 9];
    for (v, chunk) in m.iter_mut().zip(bytes.chunks_exact(4)) {
        *v = i32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    (bytes.len() >= 36).then_some(m)
}

/// Rotation in degrees (counter-clockwise, as FFmpeg reports it) of a display matrix.
pub fn rotation_degrees(matrix: &[i32; 9]) -> f64 {
    // SAFETY: av_display_rotation_get reads exactly 9 i32 values from the pointer.
    let r = unsafe { ffi::av_display_rotation_get(matrix.as_ptr()) };
    if r.is_nan() { 0.0 } else { r }
}

/// `AVMasteringDisplayMetadata` (libavutil/mastering_display_metadata.h, which the
/// bindings leave out): the mastering display's primaries, white point and luminance.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MasteringDisplay {
    /// CIE 1931 xy of the red, green and blue primaries.
    pub display_primaries: [[ffi::AVRational; 2]; 3],
    /// CIE 1931 xy of the white point.
    pub white_point: [ffi::AVRational; 2],
    /// Minimum luminance, cd/m².
    pub min_luminance: ffi::AVRational,
    /// Maximum luminance, cd/m².
    pub max_luminance: ffi::AVRational,
    /// Whether the primaries and white point are set.
    pub has_primaries: i32,
    /// Whether the luminances are set.
    pub has_luminance: i32,
}

/// `AVContentLightMetadata`: maximum content and frame-average light level, cd/m².
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ContentLight {
    /// MaxCLL.
    pub max_cll: u32,
    /// MaxFALL.
    pub max_fall: u32,
}

/// Read a `#[repr(C)]` side-data struct out of its bytes (None when too short).
fn read_side_data<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the slice holds at least size_of::<T>() bytes; read_unaligned needs no
    // alignment; T is one of the plain-old-data mirrors above (integers only), for which
    // every bit pattern is valid.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr() as *const T) })
}

/// The mastering-display metadata in side-data bytes.
pub fn parse_mastering_display(bytes: &[u8]) -> Option<MasteringDisplay> {
    read_side_data(bytes)
}

/// The content-light-level metadata in side-data bytes.
pub fn parse_content_light(bytes: &[u8]) -> Option<ContentLight> {
    read_side_data(bytes)
}

/// Copy the disposition flags of an input stream to an output stream.
pub fn copy_disposition(input: &Input, in_index: usize, output: &mut Output, out_index: usize) {
    let src = input_stream(input, in_index);
    let dst = output_stream(output, out_index);
    // SAFETY: both streams are valid for the borrows, and distinct (different contexts).
    unsafe { (*dst).disposition = (*src).disposition }
}

/// Whether muxer `muxer` lists `codec` among those it stores (avformat_query_codec); an
/// unknown answer counts as yes, leaving the decision to the muxer itself.
pub fn muxer_lists_codec(muxer: &CStr, codec: ffi::AVCodecID) -> bool {
    // SAFETY: av_guess_format returns null or a static muxer description; `muxer` is a
    // NUL-terminated name.
    let format = unsafe { ffi::av_guess_format(muxer.as_ptr(), null(), null()) };
    if format.is_null() {
        return true;
    }
    // SAFETY: `format` is a valid static muxer description.
    unsafe { ffi::avformat_query_codec(format, codec, ffi::FF_COMPLIANCE_NORMAL) != 0 }
}

/// Whether `codec` has a WAVE format tag (RIFF): Matroska stores such audio as an
/// `A_MS/ACM` track where it has no codec ID of its own (IMA and MS ADPCM, A-law, mu-law,
/// Speex), as `ffmpeg -c copy` does, though it does not list it.
pub fn has_wave_tag(codec: ffi::AVCodecID) -> bool {
    // SAFETY: avformat_get_riff_audio_tags returns FFmpeg's static tag table, terminated as
    // av_codec_get_tag expects; the pointer array lives on this stack frame for the call.
    unsafe {
        let tables = [ffi::avformat_get_riff_audio_tags(), null()];
        ffi::av_codec_get_tag(tables.as_ptr(), codec) != 0
    }
}

/// One stream for `muxer_dry_run`.
#[derive(Clone, Copy)]
pub enum DryRunStream<'a> {
    /// Input stream `index` of `input`, to be copied: parameters, time base, disposition
    /// and metadata (attachments need their file name) as they are.
    Copied(&'a Input, usize),
    /// A stream that is not encoded yet: parameters without extradata, and its time base.
    Planned(&'a ffmpeg_next::codec::Parameters, ffi::AVRational),
}

/// What `muxer_dry_run`'s stream is made from.
enum DrySource<'a> {
    /// A copied input stream.
    Stream(*mut ffi::AVStream),
    /// Planned parameters and a time base.
    Params(&'a ffmpeg_next::codec::Parameters, ffi::AVRational),
}

/// Ask muxer `muxer` whether it takes `stream`, without writing anything: the stream is set
/// up alone in a throwaway context that writes into memory and the muxer is initialised; a
/// copied stream's parameters are complete, so the header is written too. FFmpeg's own
/// checks run (codec tags, per-format refusals such as AV1 in QuickTime, Matroska's codec
/// list); the answer is its error, if any.
pub fn muxer_dry_run(muxer: &CStr, stream: DryRunStream<'_>) -> Result<(), ffmpeg_next::Error> {
    // Looked up before anything is allocated: a bad index panics with nothing to free.
    let source = match stream {
        DryRunStream::Copied(input, index) => DrySource::Stream(input_stream(input, index)),
        DryRunStream::Planned(params, time_base) => DrySource::Params(params, time_base),
    };
    let mut ctx: *mut ffi::AVFormatContext = null_mut();
    // SAFETY: `muxer` is a NUL-terminated name; on success `ctx` is a new context we own.
    let r =
        unsafe { ffi::avformat_alloc_output_context2(&mut ctx, null(), muxer.as_ptr(), null()) };
    if r < 0 || ctx.is_null() {
        return Err(ffmpeg_next::Error::from(r.min(-1)));
    }
    // SAFETY: `ctx` is the valid context allocated above, used by this thread only; the new
    // stream belongs to it; the source stream (`input_stream`) or parameters are only read; the dynamic buffer is closed and freed, and the context
    // freed (which runs the muxer's deinit), before returning.
    unsafe {
        let mut r = ffi::avio_open_dyn_buf(&mut (*ctx).pb);
        if r >= 0 {
            let st = ffi::avformat_new_stream(ctx, null());
            let with_header = matches!(stream, DryRunStream::Copied(..));
            r = if st.is_null() {
                ffi::AVERROR(ffi::ENOMEM)
            } else {
                match source {
                    DrySource::Stream(src) => {
                        (*st).time_base = (*src).time_base;
                        (*st).disposition = (*src).disposition;
                        ffi::av_dict_copy(&mut (*st).metadata, (*src).metadata, 0);
                        ffi::avcodec_parameters_copy((*st).codecpar, (*src).codecpar)
                    }
                    DrySource::Params(params, time_base) => {
                        (*st).time_base = time_base;
                        ffi::avcodec_parameters_copy((*st).codecpar, params.as_ptr())
                    }
                }
            };
            if r >= 0 {
                (*(*st).codecpar).codec_tag = 0;
                r = ffi::avformat_init_output(ctx, null_mut());
            }
            if r >= 0 && with_header {
                r = ffi::avformat_write_header(ctx, null_mut());
            }
            let mut buf: *mut u8 = null_mut();
            ffi::avio_close_dyn_buf((*ctx).pb, &mut buf);
            ffi::av_free(buf as *mut std::ffi::c_void);
            (*ctx).pb = null_mut();
        }
        ffi::avformat_free_context(ctx);
        if r < 0 {
            Err(ffmpeg_next::Error::from(r))
        } else {
            Ok(())
        }
    }
}

/// Codec parameters of a video stream that is not encoded yet: codec, size and pixel format
/// (enough for a muxer's checks; no extradata).
pub fn planned_video_params(
    codec: ffi::AVCodecID,
    width: u32,
    height: u32,
    format: ffi::AVPixelFormat,
) -> ffmpeg_next::codec::Parameters {
    let mut params = ffmpeg_next::codec::Parameters::new();
    // SAFETY: `params` owns freshly allocated codec parameters; these are plain fields.
    unsafe {
        let p = params.as_mut_ptr();
        (*p).codec_type = ffi::AVMediaType::AVMEDIA_TYPE_VIDEO;
        (*p).codec_id = codec;
        (*p).width = width as i32;
        (*p).height = height as i32;
        (*p).format = format as i32;
    }
    params
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
    /// BT.709 limited range, left-sited chroma (tests, and sources that say nothing).
    pub fn bt709() -> Self {
        Self {
            primaries: ffi::AVColorPrimaries::AVCOL_PRI_BT709,
            transfer: ffi::AVColorTransferCharacteristic::AVCOL_TRC_BT709,
            space: ffi::AVColorSpace::AVCOL_SPC_BT709,
            range: ffi::AVColorRange::AVCOL_RANGE_MPEG,
            chroma_location: ffi::AVChromaLocation::AVCHROMA_LOC_LEFT,
        }
    }

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

/// Tell swscale which matrix (an `SWS_CS_*` value) and ranges to convert with: the source's
/// for YUV input, the destination's for RGB -> YUV. Returns false when swscale cannot apply
/// them to this pair of formats.
pub fn set_scaler_colorspace(
    scaler: &mut ffmpeg_next::software::scaling::Context,
    sws_matrix: i32,
    src_full_range: bool,
    dst_full_range: bool,
) -> bool {
    // SAFETY: sws_getCoefficients returns a pointer to a static table for any value; the
    // scaler context is valid and owned by the caller; brightness 0, contrast and saturation
    // 1.0 (16.16 fixed point) leave the picture as it is.
    unsafe {
        let table = ffi::sws_getCoefficients(sws_matrix);
        ffi::sws_setColorspaceDetails(
            scaler.as_mut_ptr(),
            table,
            i32::from(src_full_range),
            table,
            i32::from(dst_full_range),
            0,
            1 << 16,
            1 << 16,
        ) >= 0
    }
}

/// Set the codec tag of output stream `index` (0 lets the muxer choose).
pub fn set_codec_tag(output: &mut Output, index: usize, tag: u32) {
    let stream = output_stream(output, index);
    // SAFETY: the stream is valid for the borrow and has allocated codec parameters.
    unsafe { (*(*stream).codecpar).codec_tag = tag }
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
    let stream = input_stream(input, index);
    // SAFETY: the stream is valid for the borrow; the call only reads it.
    let n = unsafe { ffi::avformat_index_get_entries_count(stream) };
    u64::try_from(n).unwrap_or(0)
}

/// Whether a demuxed packet carries FFmpeg's discard flag: it is decoded only to rebuild the
/// pictures after it (an MP4 edit list starting between keyframes) and yields no frame.
pub fn packet_is_discarded(packet: &ffmpeg_next::Packet) -> bool {
    use ffmpeg_next::packet::Ref;
    // SAFETY: the packet wraps a valid AVPacket for the borrow; `flags` is a plain integer.
    unsafe { (*packet.as_ptr()).flags & ffi::AV_PKT_FLAG_DISCARD != 0 }
}

/// Clear a demuxed packet's discard flag: its damaged timestamp fell outside an MP4 edit
/// list, and it is put back among frames that are shown.
pub fn keep_packet(packet: &mut ffmpeg_next::Packet) {
    use ffmpeg_next::packet::Mut;
    // SAFETY: the packet wraps a valid AVPacket owned by the caller; `flags` is a plain
    // integer and clearing the discard bit changes nothing else.
    unsafe { (*packet.as_mut_ptr()).flags &= !ffi::AV_PKT_FLAG_DISCARD };
}

/// Whether the input's format allows its timestamps to restart (AVFMT_TS_DISCONT: MPEG-TS,
/// MPEG-PS).
pub fn timestamps_may_restart(input: &Input) -> bool {
    // SAFETY: the input context and its iformat are valid for the borrow.
    unsafe { ((*(*input.as_ptr()).iformat).flags & ffi::AVFMT_TS_DISCONT) != 0 }
}

/// Whether the output's muxer needs strictly increasing decode timestamps per stream (it does
/// unless its format sets AVFMT_TS_NONSTRICT, as Matroska does).
pub fn muxer_wants_strict_dts(output: &Output) -> bool {
    // SAFETY: oformat is set for every output context.
    unsafe { ((*(*output.as_ptr()).oformat).flags & ffi::AVFMT_TS_NONSTRICT) == 0 }
}

/// Seek `input` so its next packets start at the keyframe of stream `index` at or before
/// `pts` (that stream's time base).
pub fn seek_to_keyframe(
    input: &mut Input,
    index: usize,
    pts: i64,
) -> Result<(), ffmpeg_next::Error> {
    let stream = i32::try_from(index).map_err(|_| ffmpeg_next::Error::StreamNotFound)?;
    // SAFETY: the input context is valid and exclusively borrowed; `stream` is one of its
    // streams.
    let ret =
        unsafe { ffi::av_seek_frame(input.as_mut_ptr(), stream, pts, ffi::AVSEEK_FLAG_BACKWARD) };
    if ret < 0 {
        return Err(ffmpeg_next::Error::from(ret));
    }
    Ok(())
}
