//! What a protocol above the transport may do with each connection
//! before and while it carries calls: NFSv4.1 checks that a path reaches
//! the session's server (EXCHANGE_ID) and binds every connection to the
//! session (BIND_CONN_TO_SESSION, RFC 8881 §18.34) — `v4/trunk.rs`. The
//! transport knows nothing of sessions: it asks the hook at each connect,
//! and before each write whether the connection is bound to the hook's
//! current generation.

use std::fmt::Debug;
use std::io;

use directnfs_engine::inflight::SLOT_BITS;

/// The slot part of an XID the transport reserves for the hook's calls on
/// a live connection: the engine's tables never reach it (their capacity
/// is kept below it when a hook is present), so a reply with it is the
/// hook's.
pub(crate) const HOOK_SLOT: u32 = (1 << SLOT_BITS) - 1;

/// True when `xid` is one of the hook's (see [`HOOK_SLOT`]).
pub(crate) fn is_hook_xid(xid: u32) -> bool {
    xid & HOOK_SLOT == HOOK_SLOT
}

/// Why a new connection is not handed to its channel.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The connection failed (retried after a back-off, as any connect).
    Io(io::Error),
    /// The path must not be used at all (another server): its channels
    /// stay down for good; the words say why.
    Path(String),
}

impl From<io::Error> for Refusal {
    fn from(e: io::Error) -> Self {
        Refusal::Io(e)
    }
}

/// One blocking call on a new connection: COMPOUND arguments in, the
/// results' bytes out.
pub(crate) type CallOn<'a> = dyn FnMut(u32, &[u8]) -> io::Result<Vec<u8>> + 'a;

/// See the module doc.
pub(crate) trait ConnectHook: Send + Sync + Debug {
    /// A new connection of `path` answered its NULL probe; `call` runs
    /// calls on it (salt, arguments). Returns the generation it is bound
    /// to (0: none; it is bound before its first write, see
    /// [`bind_record`](Self::bind_record)).
    fn on_connect(&self, path: usize, call: &mut CallOn<'_>) -> Result<u64, Refusal>;

    /// The generation connections must be bound to now (0: nothing to
    /// bind to yet). Read before every write: an atomic load.
    fn generation(&self) -> u64;

    /// The whole record (mark, XID in [`HOOK_SLOT`], call) that binds a
    /// live connection of channel `channel` to generation `generation`,
    /// written before anything else on it; `None` when there is nothing
    /// to bind to.
    fn bind_record(&self, channel: usize, generation: u64) -> Option<Vec<u8>>;

    /// The reply record (RPC header included) to a [`bind_record`](Self::bind_record).
    fn bind_reply(&self, channel: usize, record: &[u8]);
}
