//! Live statistics of every directnfs process on the host: each process
//! publishes the statistics of its clients on a local endpoint, and tools
//! (`dnfs stats`, `dnfs top`, `dnfs exporter`, or a program of yours) read
//! them.
//!
//! **The endpoint.** A unix stream socket per process,
//! `RUN_DIR/directnfs-UID/PID.sock` (`PID.2.sock`, ... for further copies
//! of the library in one process, which readers merge), where `RUN_DIR` is
//! `$DIRECTNFS_RUN_DIR` or `/tmp`. Nothing listens on the network. The
//! directory is made mode 0700 and must be owned by the process's user (a
//! directory of the wrong owner or mode is not used: publishing is then off,
//! with one warning); the socket is mode 0600; and on every connection the
//! peer's credentials (`SO_PEERCRED`) are checked: only the same user and
//! root are answered. A reader connects and receives one JSON
//! [`ProcessStats`](crate::stats::ProcessStats), then end of file.
//!
//! **Life cycle.** Publishing starts with a process's first client (one
//! socket and one thread, `dnfs-stats`, blocked in `accept` until asked)
//! and lasts as long as the process. The socket is bound under a temporary
//! name and linked into place once it listens, so a `PID.sock` that
//! refuses connections belongs to a dead process: readers remove such
//! stale endpoints, and a process starting to publish removes those whose
//! pid no longer exists (without connecting to anyone: starting is cheap
//! however many processes publish). At `exit` the process removes its own.
//! A forked child publishes its own endpoint (the parent's clients are not
//! its own) once its NFSv3 client's threads start: when the client needs
//! them, or at its first call after it has lived a second
//! (`io/transport/threads.rs`); an NFSv4.1 child a second after its
//! client was made (its lease renewal thread's first tick,
//! `v4/lease.rs`). A child that makes a few calls and exits sooner (a
//! PostgreSQL backend per connection) never publishes.
//!
//! **Off switch.** The mount option `stats=off` keeps a client out of its
//! process's endpoint; `DIRECTNFS_STATS=off` in the environment turns
//! publishing off for the whole process.

mod dir;
mod reader;
mod server;

pub(crate) use dir::ensure_private_dir;
pub use dir::{process_dir, run_dir};
pub use reader::{endpoints, read_endpoint, read_host, Endpoint};
pub use server::process_stats;
pub(crate) use server::{register, register_deferred, start_deferred, Published};
