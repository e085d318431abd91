//! The I/O driver: sockets, threads, and the calls moving between them.
//! The only module of the crate that touches the network. What happens to
//! a request — which channel, timeouts, failover, parking, JUKEBOX
//! back-off, giving up — is decided by the engine
//! (`directnfs_engine::lifecycle`); the driver carries out its actions and
//! feeds it events and time.
//!
//! Modules, leaves first (each imports only those above it):
//!
//! | module | job |
//! |---|---|
//! | `call.rs` | one RPC: encoded body, where the reply goes (a READ's buffer), who is told, the outcome |
//! | `tls.rs` | RPC-with-TLS (RFC 9289): AUTH_TLS probe, TLS 1.3 handshake, a relay thread per connection |
//! | `error.rs`, `clock.rs`, `socket.rs`, `oneshot.rs` | call errors; the clock; socket options; one blocking request/reply (cold paths) |
//! | `receive.rs` | the receive state machine of one connection, behind the narrow `Replies` interface |
//! | `lead.rs` | the lead token: which waiting caller receives for everyone |
//! | `hook.rs` | what a protocol does with each connection: NFSv4.1's trunking check at connect and BIND_CONN_TO_SESSION before a connection's first request of a session (re-exported by `transport/`) |
//! | `channel.rs` | one connection: its sending half, receiving half, close, NULL probe, handing a clean one on |
//! | `spare.rs` | spare connections an owner process keeps for the children it forks: the slots they share, claim, give back, tend |
//! | `transport/shared.rs` | what the threads share: the engine behind a mutex, the channels; engine actions become I/O, replies become engine events |
//! | `transport/leader.rs` | the leader loop (`poll` every connection, service each), the fallback receiver, and a log call's waiter receiving the log lanes itself (I/O classes: `directnfs_engine::class`) |
//! | `transport/maintenance.rs` | the maintenance thread: ticks the engine, sleeps until its next deadline |
//! | `transport/spares.rs` | a transport's side of the spares: a child's channel takes one, hands it back; an owner tends them |
//! | `transport/mod.rs` | `Transport`: start, stop, and the front door (`submit_many`, `wait_group`, `wait_until`) |
//!
//! # One 8 KiB `read_at`, top to bottom
//!
//! 1. `file.rs`, `File::read_at` → `read_at_once`: one READ call per
//!    `rtmax` piece, made by the file's per-version operations
//!    (`rpcops.rs` `start_read`: on NFSv3 `read_call_pooled`, a prefix
//!    encoded at open plus offset and count; on NFSv4.1 a COMPOUND on a
//!    session slot, `v4/io.rs`), each a [`call::Call`] whose sink is the
//!    caller's buffer (`ReadDest`) and whose notice is a `Group` the
//!    caller waits on; a `Landing` guard waits for them on return or
//!    unwind.
//! 2. `transport/mod.rs`, `Transport::submit_many` →
//!    `transport/shared.rs`, `Shared::submit_many` → `Shared::drive`: under
//!    the engine's lock, `Engine::submit` (`directnfs-engine`,
//!    `lifecycle.rs`) picks the least-loaded channel that is up, puts the
//!    call in that channel's in-flight table (its XID is the slot) and
//!    queues `Action::Send`; the lock is released.
//! 3. `Shared::execute` groups the sends per channel;
//!    `channel.rs`, `Channel::send_many`: record mark, XID and body as
//!    iovecs, one `writev` per connection for the whole batch.
//! 4. Back in `file.rs`: `Transport::wait_group` →
//!    `transport/leader.rs`, `wait_until`: the caller takes the lead
//!    (`lead.rs`, `Lead::try_acquire`; a `Leading` token, given up on
//!    drop) or parks as a follower until a leader completes its call.
//! 5. `leader.rs`, `lead_loop` → `service_channel`: for each connection,
//!    `receive.rs`, `RxState::service` takes what the socket holds
//!    (`recv`), hands each complete reply record to
//!    `Replies::record`, and `RxState::arm` sets `SO_RCVLOWAT` to the
//!    replies due; then `ppoll` on all of them.
//! 6. `transport/shared.rs`, `ChannelReplies::record`: decodes the RPC
//!    header, and `Engine::on_reply` matches the XID to the call (taking it
//!    out of the table; a JUKEBOX answer is kept and re-sent later); the
//!    READ data is copied into the caller's buffer (`deliver`), or, when a
//!    READ reply's data had not arrived yet, the receiver claimed the call
//!    (`Replies::claim_read`) and received the data straight into the
//!    buffer (`Replies::read_done`).
//! 7. `call.rs`, `Call::complete_after`: the outcome goes into the call's
//!    one-shot slot and the `Group` unparks the caller (or, if the caller
//!    leads, its `done()` check sees it after this pass).
//! 8. `file.rs`: `finish_read` takes the outcome, checks the NFS status and
//!    returns the byte count.
//!
//! Kerberos (`sec=krb5*`): each connection gets an RPCSEC_GSS context when
//! it connects (`connect_channel`, `security/sealer.rs`); in step 3
//! `send_sealed` seals each call as it is written, one `writev` each; in
//! step 6 `ChannelReplies::open` checks and unwraps each reply before it
//! is decoded, and step 6's direct READ receive is off (a reply is checked
//! whole before its data is used).
//!
//! Time: `transport/maintenance.rs` calls `Engine::on_tick` and sleeps
//! until `Engine::next_deadline`; a call with no reply by its deadline
//! fails its channel there, and the engine re-sends it elsewhere (step 2's
//! actions again). With `hedge=on` an NFSv3 READ still unanswered at its
//! hedge delay is sent a second time there, on another channel
//! (`directnfs_engine::hedge`); in step 6 the first reply takes both copies
//! out of the engine's tables, so the other's reply matches nothing and is
//! dropped before it can touch the caller's buffer.

pub(crate) mod call;
pub(crate) mod call_error;
pub(crate) mod channel;
pub(crate) mod clock;
pub(crate) mod hook;
pub(crate) mod kept;
pub(crate) mod lead;
pub(crate) mod oneshot;
pub(crate) mod receive;
pub(crate) mod socket;
pub(crate) mod spare;
pub(crate) mod tls;
pub(crate) mod transport;
