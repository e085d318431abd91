//! Test helpers for directnfs (dev-only).
//!
//! * [`blocks`]: self-describing checksummed blocks and the [`blocks::Ledger`]
//!   that proves, after a fault test, that nothing acknowledged was lost,
//!   torn or misplaced.

pub mod blocks;

pub use blocks::{encode_block, verify_block, BlockError, Durability, Ledger, BLOCK_SIZE};
