//! The plain CPU reference of the recognised networks (f32, NCHW, straightforward loops).
