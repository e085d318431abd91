//! `directnfs-engine`: the sans-IO core of the client.
//!
//! Everything here decides, nothing here does I/O. [`lifecycle`] owns
//! every request from submission to completion — the channel it goes on,
//! the reply that matches it, the timeout, the failover, the parking while
//! no path is up, the JUKEBOX back-off, the soft give-up — as a state
//! machine with events in and actions out. It is built from the policies
//! beside it: which channel carries a request ([`choose`]), how a reply
//! finds its request ([`inflight`]), what happens when a reply does not
//! come ([`retry`]), when a dead channel may try again ([`health`]), how a
//! re-sent non-idempotent request's reply is read ([`idempotency`]), which
//! NFSv4.1 session slot a request goes on ([`session`]), which requests
//! never wait behind which ([`class`]), when a slow READ is sent again on
//! another path ([`hedge`]), and what is counted ([`stats`]).
//!
//! Time comes in as nanosecond arguments; sockets, threads and clocks live
//! in the `directnfs` crate's driver (`crates/client/src/io/`), and this
//! crate's `clippy.toml` keeps them out. That split lets the whole request
//! lifecycle be tested in simulated time (`tests/simulated.rs`), in
//! milliseconds.
#![forbid(unsafe_code)]

pub mod choose;
pub mod class;
pub mod health;
pub mod hedge;
pub mod idempotency;
pub mod inflight;
pub mod lifecycle;
pub mod retry;
pub mod session;
pub mod stats;

pub use class::IoClass;
pub use hedge::HedgePolicy;
pub use lifecycle::{Action, Answer, Config, Delivered, Engine, Failure, Load, LoadGauge, Request};
