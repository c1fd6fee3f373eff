//! Durations for copied audio packets that come without one (ALAC in Matroska: no parser
//! gives them). MP4 and MOV end a track at its last packet's start plus that packet's
//! duration, so a last packet without one was written and then hidden: its samples never
//! played (FFmpeg's own stream copy loses them the same way). The stream's decoder says how
//! many samples such a packet holds: exactly for codecs whose packets decode on their own
//! without delay (ALAC, PCM, FLAC, WavPack, TTA); where a decoder holds frames back, the
//! count may be a neighbour's, still the length of a packet of that stream.

use ffmpeg_next::codec::Parameters;
use ffmpeg_next::format::stream::Stream;
use ffmpeg_next::media::Type;
use ffmpeg_next::{Packet, Rational, Rescale};

/// Fills in the duration of one audio stream's packets that have none.
pub struct DurationFill {
    parameters: Parameters,
    /// The stream's time base (the packets' before any rescaling).
    time_base: Rational,
    /// Opened at the first packet without a duration; `None` until then, or where it cannot
    /// be opened.
    decoder: Option<ffmpeg_next::decoder::Audio>,
    /// The decoder could not be opened: only the fallback is left.
    unavailable: bool,
    /// The start of the packet before, and the step from the one before it: the duration
    /// given where the decoder says nothing.
    previous: Option<(i64, Option<i64>)>,
}

impl DurationFill {
    /// For an audio `stream` (its packets in its own time base); `None` for another kind.
    pub fn for_stream(stream: &Stream) -> Option<Self> {
        let parameters = stream.parameters();
        (parameters.medium() == Type::Audio).then(|| Self {
            parameters,
            time_base: stream.time_base(),
            decoder: None,
            unavailable: false,
            previous: None,
        })
    }

    /// Give `packet` (in the stream's time base) its duration where it has none: the
    /// samples its decoder makes of it, else the step between the two packets before.
    pub fn fill(&mut self, packet: &mut Packet) {
        let pts = packet.pts().or(packet.dts());
        let step = match (pts, self.previous) {
            (Some(now), Some((before, _))) if now > before => Some(now - before),
            (_, previous) => previous.and_then(|(_, step)| step),
        };
        if let Some(now) = pts {
            self.previous = Some((now, step));
        }
        if packet.duration() > 0 {
            return;
        }
        if let Some(duration) = self.decoded_duration(packet).or(step) {
            packet.set_duration(duration);
        }
    }

    /// How long `packet` lasts by its decoded samples, in the stream's time base.
    fn decoded_duration(&mut self, packet: &Packet) -> Option<i64> {
        let time_base = self.time_base;
        let decoder = self.decoder()?;
        decoder.send_packet(packet).ok()?;
        let mut duration = 0i64;
        let mut frame = ffmpeg_next::frame::Audio::empty();
        while decoder.receive_frame(&mut frame).is_ok() {
            // Each frame's own rate: HE-AAC's stream parameters may give half of it.
            if let Ok(rate) = i32::try_from(frame.rate())
                && rate > 0
            {
                duration += (frame.samples() as i64).rescale(Rational::new(1, rate), time_base);
            }
        }
        (duration > 0).then_some(duration)
    }

    /// The stream's decoder, opened on first use.
    fn decoder(&mut self) -> Option<&mut ffmpeg_next::decoder::Audio> {
        if self.decoder.is_none() && !self.unavailable {
            let opened =
                ffmpeg_next::codec::context::Context::from_parameters(self.parameters.clone())
                    .and_then(|context| context.decoder().audio());
            match opened {
                Ok(decoder) => self.decoder = Some(decoder),
                Err(_) => self.unavailable = true,
            }
        }
        self.decoder.as_mut()
    }
}
