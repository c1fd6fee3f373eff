//! How many segment workers a job runs, and the threads each one's inference, encoder
//! and decoder get, so that the workers together do not oversubscribe the cores.

use super::worker::JobSpec;
use crate::config::{Device, UpscaleConfig};

/// Segment workers the job plans for: `--jobs`, or two where a GPU can run the model
/// (inference is faster than one software encoder, so a second segment keeps it busy), one
/// on the CPU (inference already uses every core); with several GPUs (`--gpus`), that many
/// on each.
pub fn planned_workers(config: &UpscaleConfig) -> usize {
    let gpu_possible =
        config.device != Device::Cpu && std::path::Path::new("/dev/nvidiactl").exists();
    let wanted = config
        .segments
        .jobs
        .unwrap_or(if gpu_possible { 2 } else { 1 });
    let gpus = if config.device == Device::Cpu {
        1
    } else {
        config.gpu.gpus.len().max(1)
    };
    (wanted * gpus).max(1)
}

/// Segments processed at once: the planned workers, never more than there are segments.
pub fn default_jobs(config: &UpscaleConfig, pending: usize) -> usize {
    planned_workers(config).clamp(1, pending.max(1))
}

/// The spec each of `jobs` workers runs with: the CPU's inference threads shared out
/// between them unless `--threads` says otherwise, and with several GPUs the software
/// encoders' and decoders' threads too, over the `planned` workers of the whole job, so
/// that a resumed job with fewer segments left encodes each one as the first run would
/// have (libx264's output depends on its thread count).
pub fn per_worker(mut spec: JobSpec, jobs: usize, planned: usize) -> JobSpec {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if jobs > 1 && spec.config.threads == 0 {
        spec.config.threads = (cores / jobs).max(1);
    }
    let gpus = match spec.config.device {
        Device::Cpu => 1,
        _ => spec.config.gpu.gpus.len(),
    };
    let share = shared_threads(cores, planned, gpus);
    if spec.config.encoder.threads.is_none() {
        spec.config.encoder.threads = share;
    }
    if spec.config.decoder_threads.is_none() {
        spec.config.decoder_threads = share;
    }
    spec
}

/// Threads each of `workers` software encoders (and decoders) gets on `cores`, where they
/// are spread over `gpus` GPUs: with several GPUs, the cores shared out (each would
/// otherwise size its pool from all of them, and the GPUs' workers would fight over the
/// CPU); with one, the codecs' own choice, as measured on one GPU.
fn shared_threads(cores: usize, workers: usize, gpus: usize) -> Option<usize> {
    (gpus > 1 && workers > 1).then(|| (cores / workers).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_share_the_cores_only_across_several_gpus() {
        assert_eq!(shared_threads(32, 4, 2), Some(8));
        assert_eq!(shared_threads(16, 2, 1), None, "one GPU: as before");
        assert_eq!(shared_threads(4, 8, 2), Some(1));
        assert_eq!(shared_threads(32, 1, 2), None, "one worker");
    }

    fn two_gpus_two_jobs_each() -> UpscaleConfig {
        use crate::config::{GpuOptions, SegmentOptions};
        UpscaleConfig {
            device: Device::Gpu,
            gpu: GpuOptions {
                gpus: vec![0, 1],
                ..GpuOptions::default()
            },
            segments: SegmentOptions {
                jobs: Some(2),
                ..SegmentOptions::default()
            },
            ..UpscaleConfig::for_test("in.mp4".into(), "out.mp4".into(), "model.onnx".into())
        }
    }

    #[test]
    fn the_threads_come_from_the_workers_planned_not_the_segments_left() {
        let mut config = two_gpus_two_jobs_each();
        assert_eq!(planned_workers(&config), 4);
        // A resume with one segment left runs one worker, and it encodes with the threads
        // of the first run's four.
        assert_eq!(default_jobs(&config, 1), 1);
        let spec = JobSpec {
            config: config.clone(),
            container: rave_ffmpeg::Container::Mp4,
            in_size: (64, 48),
            bit_depth: 8,
            structure: None,
            nvenc_everywhere: Default::default(),
            skip_before_keyframe: false,
            damaged: false,
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let resumed = per_worker(spec, 1, 4);
        assert_eq!(resumed.config.encoder.threads, Some((cores / 4).max(1)));
        assert_eq!(resumed.config.decoder_threads, Some((cores / 4).max(1)));
        config.device = Device::Cpu;
        assert_eq!(planned_workers(&config), 2, "the CPU is one device");
    }
}
