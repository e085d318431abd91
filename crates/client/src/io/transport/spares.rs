//! A transport's side of the spare connections (`io/spare.rs`): an owner
//! transport keeps spares for its children's transports, a child's
//! transport takes one for the first channel of each path instead of
//! connecting, and hands it back clean — or not at all — when it stops or
//! the process exits.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::shared::Shared;
use crate::io::spare::{self, Taken};

impl Shared {
    /// The spare key of `path` (0: none).
    fn spare_key(&self, path: usize) -> u64 {
        self.config.spare_keys.get(path).copied().unwrap_or(0)
    }

    /// A child's transport: takes a spare connection for `channel` if one
    /// is free, as the channel's first connection (no NULL probe: the
    /// owner probed it, and the engine times this child's first call like
    /// any other). Returns whether it did.
    pub(crate) fn adopt_spare(self: &Arc<Self>, channel: usize) -> bool {
        let ch = &self.channels[channel];
        let Some(Taken { slot, stream, salt }) = spare::claim(self.spare_key(ch.path)) else {
            return false;
        };
        let (epoch, reseeded) = {
            let mut e = self.engine();
            (e.epoch(channel) + 1, e.reseed(channel, salt))
        };
        if !reseeded
            || ch
                .install(stream, (epoch, 0), self.config.max_record, None)
                .is_err()
        {
            spare::give_back(slot, None);
            return false;
        }
        let got = self.drive(|e, now| e.on_connected(channel, now));
        debug_assert_eq!(got, epoch);
        self.config
            .alerts
            .channel_connected(ch.id, &ch.spec.label(), false);
        self.lead.wake();
        self.note_spare(channel, slot, epoch, salt);
        true
    }

    /// Remembers that `channel` runs on spare `slot` since `epoch`: it is
    /// handed back when the transport stops, or at exit (the transport's
    /// first spare registers it for that).
    fn note_spare(self: &Arc<Self>, channel: usize, slot: usize, epoch: u64, salt: u32) {
        let first = match self.spares.lock() {
            Ok(mut spares) => {
                spares.push((channel, slot, epoch, salt));
                spares.len() == 1
            }
            Err(_) => false,
        };
        if first {
            let me: Weak<Self> = Arc::downgrade(self);
            spare::at_exit(Box::new(move || {
                if let Some(sh) = me.upgrade() {
                    sh.give_back_spares();
                }
            }));
        }
    }

    /// Lets go of `channel`'s spare connection if it is clean (see
    /// `Channel::hand_on`): nothing of this process's may still use it —
    /// its threads never started (nothing receives behind our back), no
    /// call of the channel is in the engine's table. Returns the next
    /// user's XID salt: past every XID this process sent on it (each of
    /// the table's slots moves its generation once per call).
    fn hand_on(&self, channel: usize, epoch: u64, salt: u32) -> Option<u32> {
        if self.threads.started() {
            return None;
        }
        let idle = match self.try_engine() {
            Some(e) => e.epoch(channel) == epoch && e.load(channel).requests == 0,
            None => false,
        };
        let ch = &self.channels[channel];
        let sent = ch.sent.load(Ordering::Relaxed);
        (idle && ch.hand_on(epoch)).then(|| {
            salt.wrapping_add(sent as u32)
                .wrapping_add(self.config.max_inflight as u32)
                .wrapping_add(1)
        })
    }

    /// Hands back every spare of this transport (clean or dead): when it
    /// stops, so that nothing closes them for the others first, or at
    /// exit. Each only once: they are taken out of the list.
    pub(crate) fn give_back_spares(&self) {
        let spares = match self.spares.lock() {
            Ok(mut s) => std::mem::take(&mut *s),
            Err(_) => return,
        };
        for (channel, slot, epoch, salt) in spares {
            spare::give_back(slot, self.hand_on(channel, epoch, salt));
        }
    }

    /// An owner transport's maintenance: tends the spares of each of its
    /// paths (`spare::tend`), and when children missed, connects one more
    /// like the path's first channel, with a NULL probe, in a thread of its
    /// own (one at a time): the maintenance thread never waits for a
    /// connect. Returns whether spares are in use (the maintenance thread
    /// then ticks even when idle: children's misses are noticed within a
    /// tick).
    pub(crate) fn tend_spares(self: &Arc<Self>) -> bool {
        let mut active = false;
        for (path, &key) in self.config.spare_keys.iter().enumerate() {
            // Spares are made like the path's first channel.
            let Some(ch) = self.channels.iter().find(|c| c.path == path) else {
                continue;
            };
            let tended = spare::tend(key);
            active |= tended.active;
            if tended.wanted && !self.making_spare.swap(true, Ordering::AcqRel) {
                let sh = Arc::clone(self);
                let spec = ch.spec.clone();
                let made = crate::signals::spawn("dnfs-spare", move || {
                    match sh.connect_spare(&spec) {
                        Ok(stream) => spare::install(key, stream),
                        Err(e) => tracing::debug!("spare connection: {e}"),
                    }
                    sh.making_spare.store(false, Ordering::Release);
                });
                if made.is_err() {
                    self.making_spare.store(false, Ordering::Release);
                }
            }
        }
        active
    }

    /// A spare connection for a path: connected as `spec` says and proved
    /// by a NULL call.
    fn connect_spare(&self, spec: &crate::io::socket::ConnectSpec) -> io::Result<TcpStream> {
        let mut stream = crate::io::socket::connect(spec)?;
        stream.set_write_timeout(Some(spec.timeout))?;
        crate::io::channel::Channel::probe(
            &mut stream,
            &self.config.cred,
            self.config.prog,
            self.config.vers,
            spec.timeout,
        )?;
        stream.set_write_timeout(None)?;
        stream.set_read_timeout(None)?;
        Ok(stream)
    }
}
