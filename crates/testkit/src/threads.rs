//! The threads of this process as the kernel describes them
//! (`/proc/self/task/*/status`): for the tests that check which signals
//! the library's threads block.

/// One thread of this process.
#[derive(Debug, Clone)]
pub struct ThreadSignals {
    /// Its name (`Name:`, cut by the kernel to 15 bytes).
    pub name: String,
    /// The signals it blocks (`SigBlk:`): bit `n - 1` for signal `n`.
    pub blocked: u64,
}

impl ThreadSignals {
    /// Whether the thread blocks signal number `sig`.
    pub fn blocks(&self, sig: i32) -> bool {
        (1..=64).contains(&sig) && self.blocked & (1u64 << (sig - 1)) != 0
    }
}

/// Every thread of this process whose name starts with `prefix`.
pub fn named(prefix: &str) -> Vec<ThreadSignals> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).ok()?;
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(str::trim)
            };
            let name = field("Name:")?;
            let blocked = u64::from_str_radix(field("SigBlk:")?, 16).ok()?;
            name.starts_with(prefix).then(|| ThreadSignals {
                name: name.to_owned(),
                blocked,
            })
        })
        .collect()
}
