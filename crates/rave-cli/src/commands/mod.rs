//! One module per `rave` command.

pub mod benchmark;
pub mod models;
pub mod probe;
pub mod upscale;
