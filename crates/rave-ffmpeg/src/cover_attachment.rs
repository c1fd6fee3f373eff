//! Cover art in Matroska. FFmpeg 5.1's Matroska muxer writes no cover art: it would store
//! a JPEG as a one-frame video track and refuse a PNG. Matroska players read cover art from
//! an attachment named `cover.jpg` / `cover.png` with its MIME type (as mkvmerge writes
//! it, and as FFmpeg reads it back as cover art), so that is what the output gets.

use ffmpeg_next::codec::Id;
use ffmpeg_next::ffi;
use ffmpeg_next::format::context::{Input, Output};

use crate::sys;

/// The MIME type and file extension of a picture codec Matroska can attach as cover art.
pub fn attachable(codec: Id) -> Option<(&'static str, &'static str)> {
    match codec {
        Id::MJPEG => Some(("image/jpeg", "jpg")),
        Id::PNG => Some(("image/png", "png")),
        Id::GIF => Some(("image/gif", "gif")),
        Id::BMP => Some(("image/bmp", "bmp")),
        Id::WEBP => Some(("image/webp", "webp")),
        Id::TIFF => Some(("image/tiff", "tif")),
        _ => None,
    }
}

/// The picture of cover-art stream `index` of `input` (the packet FFmpeg attached to it);
/// `None` when it holds none.
pub fn picture(input: &Input, index: usize) -> Option<Vec<u8>> {
    let stream = sys::input_stream(input, index);
    // SAFETY: the stream is valid for the borrow of `input`; its `attached_pic` packet is
    // owned by the stream, and `data` points to `size` readable bytes when non-null.
    unsafe {
        let packet = &(*stream).attached_pic;
        if packet.data.is_null() || packet.size <= 0 {
            return None;
        }
        Some(std::slice::from_raw_parts(packet.data, packet.size as usize).to_vec())
    }
}

/// The tags of the attachment made of cover-art stream `index`: its own (a Matroska source's
/// file name and MIME type come back this way), with a file name `cover.EXT` (then
/// `cover-2.EXT`, ... for the `nth` picture) and the MIME type of `codec` where it has none.
pub fn tags(
    input: &Input,
    index: usize,
    codec: Id,
    nth: usize,
) -> Option<ffmpeg_next::Dictionary<'static>> {
    let (mime, extension) = attachable(codec)?;
    let stream = input.stream(index)?;
    let mut tags = stream.metadata().to_owned();
    if tags.get("filename").is_none_or(str::is_empty) {
        let name = match nth {
            0 | 1 => format!("cover.{extension}"),
            n => format!("cover-{n}.{extension}"),
        };
        tags.set("filename", &name);
    }
    if tags.get("mimetype").is_none_or(str::is_empty) {
        tags.set("mimetype", mime);
    }
    Some(tags)
}

/// Turn output stream `index` into an attachment of `codec` holding `picture`.
pub fn make_attachment(output: &mut Output, index: usize, codec: Id, picture: &[u8]) {
    let stream = sys::output_stream(output, index);
    let padded = picture.len() + ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
    // SAFETY: the stream is valid for the borrow of `output` and its codec parameters are
    // allocated (avformat_new_stream); the old extradata is freed before it is replaced, and
    // the new buffer is av_mallocz'd with the padding FFmpeg requires, `picture.len()` bytes
    // copied into it (a failed allocation leaves the stream without data: the muxer then
    // refuses it with an error instead of reading a null pointer).
    unsafe {
        let params = (*stream).codecpar;
        ffi::av_freep(std::ptr::addr_of_mut!((*params).extradata).cast());
        (*params).extradata_size = 0;
        (*params).codec_type = ffi::AVMediaType::AVMEDIA_TYPE_ATTACHMENT;
        (*params).codec_id = codec.into();
        (*params).codec_tag = 0;
        let data = ffi::av_mallocz(padded).cast::<u8>();
        if !data.is_null() {
            std::ptr::copy_nonoverlapping(picture.as_ptr(), data, picture.len());
            (*params).extradata = data;
            (*params).extradata_size = picture.len() as i32;
        }
    }
}

/// Add cover-art stream `index` of `input` to a Matroska `output` as an attachment (the
/// `nth` picture: see `tags`).
pub fn attach(
    output: &mut Output,
    input: &Input,
    index: usize,
    nth: usize,
) -> std::result::Result<(), String> {
    let codec = input
        .stream(index)
        .map(|s| s.parameters().id())
        .unwrap_or(ffmpeg_next::codec::Id::None);
    let (Some(picture), Some(tags)) = (picture(input, index), tags(input, index, codec, nth))
    else {
        return Err(format!(
            "stream #{index} (cover art) holds no picture Matroska can attach"
        ));
    };
    let mut ost = output
        .add_stream(ffmpeg_next::encoder::find(ffmpeg_next::codec::Id::None))
        .map_err(|e| e.to_string())?;
    ost.set_metadata(tags);
    let out_index = ost.index();
    make_attachment(output, out_index, codec, &picture);
    Ok(())
}
