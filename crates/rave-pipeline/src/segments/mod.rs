//! Segments: a job is planned as segments of whole frames cut at keyframes, each upscaled
//! into a video-only file in a work folder with a manifest, then assembled into the output.
//! A short clip is one segment; an interrupted job resumes from its finished segments;
//! several segments run at once (`--jobs`) or on other machines (`rave segment`).

pub mod assemble;
pub mod commit;
pub mod distributed;
pub mod done_segments;
pub mod durable_write;
pub mod failures;
pub mod fingerprint;
pub mod finish;
pub mod job;
pub mod job_progress;
pub mod job_work;
pub mod last_frame;
pub mod manifest;
pub mod nvenc_everywhere;
pub mod paths;
pub mod plan;
pub mod pool;
pub mod queue;
pub mod run_job;
pub mod startup;
pub mod work_files;
pub mod work_folder;
pub mod worker;
pub mod worker_count;
