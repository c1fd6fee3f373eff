//! Several inputs, or a folder, into an output folder: the plan checked before any work,
//! then one run per input, one after another, and a summary of them all.

mod folder;
mod plan;
mod report;
mod run;

pub use plan::{InputJob, LeftOutReason, Plan, plan};
pub use report::{BatchReport, InputResult, InputStatus};
pub use run::{FINISH_BATCH, run};
