//! Test helpers for directnfs (dev-only).
//!
//! * [`blocks`]: self-describing checksummed blocks and the [`blocks::Ledger`]
//!   that proves, after a fault test, that nothing acknowledged was lost,
//!   torn or misplaced.
//! * [`ganesha`]: an NFS-Ganesha of a test's own ([`ganesha::OwnGanesha`]),
//!   for tests that need a server set up or stopped differently from the
//!   shared one.

pub mod blocks;
pub mod ganesha;

pub use blocks::{encode_block, verify_block, BlockError, Durability, Ledger, BLOCK_SIZE};
