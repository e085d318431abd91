//! The library's process-wide state, made once when the library is loaded
//! (an `.init_array` constructor, before `main`) and never freed. Until it
//! exists, and when there is no dnfstab, every call passes through.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::config::{self, Config};
use crate::shadow::Shadow;

/// Everything the entry points consult.
#[derive(Debug)]
pub struct State {
    /// The mounts.
    pub config: Config,
    /// Where placeholder files live.
    pub shadow: Shadow,
}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());

/// The state, when NFS paths are served in this process.
#[inline(always)]
pub fn get() -> Option<&'static State> {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        None
    } else {
        // SAFETY: set once from a leaked Box and never freed or changed.
        Some(unsafe { &*p })
    }
}

/// Loads the dnfstab and takes over what an `exec` passed on. Runs once;
/// calls made while it runs (its own file reads) pass through.
pub fn init() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    config::read_umask();
    let Some(config) = config::load() else {
        return;
    };
    let state = Box::leak(Box::new(State {
        config,
        shadow: Shadow::from_env(),
    }));
    crate::clients::init(state.config.mounts.len());
    STATE.store(state, Ordering::Release);
    crate::fork::register();
    crate::cwd::init(state);
    crate::fdtable::take_over_inherited(state);
    crate::ops::stdio::rewire_inherited();
}
