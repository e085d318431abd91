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
    /// Whether writes on `stable: unstable` mounts may go behind the
    /// writer's back ([`ENV_WRITE_BEHIND`]).
    pub write_behind: bool,
    /// Whether `mmap` with `MAP_PRIVATE` of an NFS file is served as a
    /// private copy ([`ENV_MMAP`]).
    pub map_copies: bool,
    /// Whether libaio contexts and liburing rings may be set up
    /// ([`crate::ops::unsupported::ENV_KERNEL_AIO`]).
    pub kernel_aio: bool,
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

/// Environment variable: `1` (or `on`, `yes`, `true`) lets writes on
/// `stable: unstable` mounts use the client's write-behind. Off by default
/// because every process is its own client: a WRITE still in flight in
/// one process is invisible to another process's READ, size or `fsync`
/// (only `fcntl`/`flock` lock releases wait for it), and programs whose
/// processes synchronise through shared memory — PostgreSQL — then read
/// stale pages and sizes ("unexpected data beyond EOF").
pub const ENV_WRITE_BEHIND: &str = "DIRECTNFS_PRELOAD_WRITE_BEHIND";

fn write_behind_allowed() -> bool {
    std::env::var(ENV_WRITE_BEHIND).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "on" | "yes" | "true"
        )
    })
}

/// Environment variable: `copy` serves `mmap` with `MAP_PRIVATE` of an NFS
/// file as a private copy read at `mmap` (ops/mapped.rs). Off by default:
/// the copy never sees later writes to the file, where Linux's page cache
/// shows them in every page the process has not written — and engines
/// rely on that (WiredTiger reads its data files through a read-only
/// private mapping while it rewrites freed blocks with `pwrite`). Refused,
/// such an engine gets `ENODEV` and says so (or reads instead); served, it
/// would read stale blocks. Right for programs that do not change a file
/// while it is mapped, or replace it by `rename`: git.
pub const ENV_MMAP: &str = "DIRECTNFS_PRELOAD_MMAP";

fn map_copies_allowed() -> bool {
    std::env::var(ENV_MMAP).is_ok_and(|v| v.trim().eq_ignore_ascii_case("copy"))
}

/// Environment variable setting where the clients' own descriptors go.
pub const ENV_FD_FLOOR: &str = "DIRECTNFS_FD_FLOOR";

/// The lowest descriptor number the clients' sockets and eventfds take:
/// `$DIRECTNFS_FD_FLOOR`, else half the descriptor limit, at most 1024 —
/// well above the numbers programs choose themselves (shells use 0-9 and
/// 10-255), so a program's `dup2` never lands on a connection.
fn descriptor_floor() -> i32 {
    if let Some(v) = std::env::var(ENV_FD_FLOOR)
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    {
        return v.max(0);
    }
    // SAFETY: getrlimit fills the struct it is given.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    (lim.rlim_cur / 2).min(1024) as i32
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
        write_behind: write_behind_allowed(),
        map_copies: map_copies_allowed(),
        kernel_aio: crate::ops::unsupported::kernel_aio_switch(),
    }));
    // Before the state is published: the check's own calls go to libc.
    config::warn_hidden_local_dirs(&state.config);
    dnfs::process::set_descriptor_floor(descriptor_floor());
    crate::clients::init(state.config.mounts.len());
    STATE.store(state, Ordering::Release);
    crate::fork::register();
    crate::clients::report_at_exit_if_asked();
    crate::cwd::init(state);
    crate::fdtable::take_over_inherited(state);
    crate::ops::stdio::rewire_inherited();
}

#[cfg(test)]
impl State {
    /// A state with one mount per prefix (exports `/e0`, `/e1`, ...) of a
    /// server nobody calls.
    pub fn for_tests(prefixes: &[&str]) -> State {
        let mut text = String::from("server: s\npath: 127.0.0.1\n");
        for (i, p) in prefixes.iter().enumerate() {
            text.push_str(&format!("export: /e{i} mount: {p}\n"));
        }
        let tab = dnfs::config::parse_str(&text, std::path::Path::new("t")).unwrap();
        State {
            config: crate::config::from_tab(&tab).unwrap(),
            shadow: crate::shadow::Shadow::from_env(),
            write_behind: false,
            map_copies: false,
            kernel_aio: false,
        }
    }
}
