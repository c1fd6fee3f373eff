//! `rave probe`: describe a media file.

use rave_core::error::Result;

use crate::args::ProbeArgs;
use crate::summary;

/// Run `rave probe`.
pub fn run(args: &ProbeArgs) -> Result<i32> {
    let info = rave_ffmpeg::probe(&args.input)?;
    super::print_result(args.json, &info, summary::print_probe);
    Ok(0)
}
