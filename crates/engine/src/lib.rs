//! `directnfs-engine`: the sans-IO core of the client.
//!
//! Everything here decides, nothing here does I/O: which channel carries a
//! request ([`choose`]), how a reply finds its request ([`inflight`]), what
//! happens when a reply does not come ([`retry`]), when a dead channel may
//! try again ([`health`]), how a re-sent non-idempotent request's reply is
//! read ([`idempotency`]), and what is counted ([`stats`]). Time comes in as
//! nanosecond arguments; sockets and threads live in the `directnfs` crate's
//! driver. That split lets every policy be tested in microseconds with
//! simulated time.
#![forbid(unsafe_code)]

pub mod choose;
pub mod health;
pub mod idempotency;
pub mod inflight;
pub mod retry;
pub mod stats;
