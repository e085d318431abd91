//! Test helpers for directnfs (dev-only).
//!
//! * [`blocks`]: self-describing checksummed blocks and the [`blocks::Ledger`]
//!   that proves, after a fault test, that nothing acknowledged was lost,
//!   torn or misplaced.
//! * [`ganesha`]: an NFS-Ganesha of a test's own ([`ganesha::OwnGanesha`]),
//!   for tests that need a server set up or stopped differently from the
//!   shared one.
//! * [`proxy`]: an RPC proxy for one network path that forwards NFSv3
//!   traffic to a real server and answers a chosen share of READ, WRITE
//!   and COMMIT calls with NFS3ERR_JUKEBOX itself (the fault soak's way to
//!   make a server say "try again later").
//! * [`rng`]: the splitmix64 generator they share.
//! * [`hostile`]: a hostile NFSv3 server (MOUNT, NFS and PORTMAP on one
//!   port) that follows a plan of faults, with what the tests measure the
//!   client by ([`hostile::watch`]) and a capture of everything it logs
//!   ([`hostile::capture`]).
//! * [`server`]: whether the real-server tests run: the one reading of
//!   `DNFS_TEST_URL` and `DNFS_TEST_REQUIRE_SERVER`.
//! * [`tap`]: a TCP relay that keeps a copy of every byte both ways (what
//!   the Kerberos privacy test looks at).
//! * [`threads`]: this process's threads and the signals each blocks.

pub mod blocks;
pub mod ganesha;
pub mod hostile;
pub mod proxy;
pub mod rng;
pub mod server;
pub mod tap;
pub mod threads;

pub use blocks::{encode_block, verify_block, BlockError, Durability, Ledger, BLOCK_SIZE};
