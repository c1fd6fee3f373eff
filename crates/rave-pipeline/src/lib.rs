//! placeholder for dep build
