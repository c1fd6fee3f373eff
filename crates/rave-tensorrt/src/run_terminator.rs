//! Interrupting ONNX Runtime runs in flight: the terminate flag of the run options they use.

use std::sync::Arc;

use ort::session::RunOptions;
use rave_core::backend::Interrupt;

/// Sets the terminate flag of every run-option set a backend runs with: the run in flight
/// returns with an error, and so does every later one (the backend is being stopped).
pub(crate) struct RunTerminator(pub(crate) Vec<Arc<RunOptions>>);

impl Interrupt for RunTerminator {
    fn interrupt(&self) {
        for options in &self.0 {
            // Failure only means ORT refused the flag; the run then ends on its own.
            let _ = options.terminate();
        }
    }
}
