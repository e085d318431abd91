//! Process plumbing, for the C library and the interception library: not
//! needed by Rust programs.
//!
//! A library loaded into a program it does not control (PostgreSQL, a
//! shell, anything `LD_PRELOAD` reaches) has to keep its descriptors out
//! of the program's way, start its threads with every signal blocked, see
//! that it is running in the child of a `fork`, and hand the connections
//! a child borrowed back before `_exit`. A Rust program that makes a
//! [`Client`](crate::Client) and uses it needs none of this: the client
//! does each of these things itself with its defaults.

pub use crate::fdfloor::{
    host_places, reset_in_child as reset_descriptor_windows_in_child, set_descriptor_floor,
};
pub use crate::fork::fork_generation;
pub use crate::io::spare::hand_back_all as hand_back_spare_connections;
pub use crate::signals::{spawn as spawn_thread, with_signals_blocked, Joiner as ThreadJoiner};
