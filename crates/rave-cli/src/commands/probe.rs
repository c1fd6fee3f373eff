//! `rave probe`: describe a media file.

use rave_core::error::Result;

use crate::args::ProbeArgs;
use crate::summary;

/// Run `rave probe`.
pub fn run(args: &ProbeArgs) -> Result<i32> {
    let info = rave_ffmpeg::probe(&args.input)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).unwrap_or_default()
        );
    } else {
        summary::print_probe(&info);
    }
    Ok(0)
}
