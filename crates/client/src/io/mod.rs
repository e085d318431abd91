//! The I/O driver: sockets, threads, and the calls moving between them.
//! The only module of the crate that touches the network.

pub(crate) mod call;
pub(crate) mod channel;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod lead;
pub(crate) mod oneshot;
pub(crate) mod receive;
pub(crate) mod socket;
pub(crate) mod transport;
