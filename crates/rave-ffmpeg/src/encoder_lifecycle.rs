//! Software encoders opened and closed one at a time, process-wide. SVT-AV1 1.4 keeps one
//! table of the machine's processors for the whole process, without a lock: each handle's
//! open allocates it where absent and fills it, and each handle's close frees it, even while
//! other handles live. An open beside another encoder's close writes through a freed or null
//! table (a segfault, seen where one worker's segment ended as another's began).

use std::sync::Mutex;

/// Run `f` (an encoder's open or close) while no other encoder opens or closes.
pub(crate) fn one_at_a_time<R>(f: impl FnOnce() -> R) -> R {
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    f()
}
