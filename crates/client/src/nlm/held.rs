//! The NLM locks this process holds on one server, and what to do with
//! each of them after the connection to the server's lock manager broke
//! (it may have restarted and forgotten them): the bookkeeping and the
//! decisions of the reclaim (`super`), without a server.
//!
//! * **The table** ([`Held`]): for each (file handle, owner) the byte
//!   ranges the server granted, shared or exclusive, with POSIX's rules:
//!   a lock replaces what the owner held on its range (a downgrade, an
//!   upgrade, a split), an unlock removes its range, neighbours of one
//!   mode merge. Updated only when the server said NLM4_GRANTED: what it
//!   refused never changes what is held.
//! * **Lost locks**: a range the server no longer holds for us (see
//!   [`judge_test`], [`judge_reclaim`]) leaves the table and marks its
//!   (file, owner) lost with the reason, until the owner's next unlock on
//!   the file reports it (`Error::LockLost`, EIO).

use std::collections::HashMap;

use directnfs_wire::nlm4::{nlm4_holder, nlm4_stats};

use super::NlmOwner;
pub(crate) use crate::lock_ranges::Range;
use crate::lock_ranges::Ranges;

/// The key of the table: a file handle's bytes and a lock owner.
pub(crate) type Key = (Vec<u8>, NlmOwner);

#[derive(Debug, Default)]
struct Entry {
    ranges: Ranges,
    /// Why some of this owner's locks on the file were lost.
    lost: Option<String>,
}

/// The locks of this process on one server's lock manager.
#[derive(Debug, Default)]
pub(crate) struct Held {
    files: HashMap<Key, Entry>,
}

impl Held {
    /// The server granted `r` to `key`.
    pub(crate) fn locked(&mut self, key: &Key, r: Range) {
        self.files.entry(key.clone()).or_default().ranges.add(r);
    }

    /// `key` released bytes `start..end`.
    pub(crate) fn unlocked(&mut self, key: &Key, start: u64, end: u64) {
        if let Some(e) = self.files.get_mut(key) {
            e.ranges.remove(start, end);
            if e.ranges.is_empty() && e.lost.is_none() {
                self.files.remove(key);
            }
        }
    }

    /// `r` of `key` is no longer held on the server, for `why`.
    pub(crate) fn lose(&mut self, key: &Key, r: Range, why: &str) {
        let e = self.files.entry(key.clone()).or_default();
        e.ranges.remove(r.start, r.end);
        let line = format!("{r}: {why}");
        e.lost = Some(match e.lost.take() {
            Some(before) => format!("{before}; {line}"),
            None => line,
        });
    }

    /// Why locks of `key` were lost, if they were (kept until
    /// [`acknowledge`](Self::acknowledge)).
    pub(crate) fn lost(&self, key: &Key) -> Option<&str> {
        self.files.get(key).and_then(|e| e.lost.as_deref())
    }

    /// The owner was told of its lost locks: forget them.
    pub(crate) fn acknowledge(&mut self, key: &Key) -> Option<String> {
        let e = self.files.get_mut(key)?;
        let why = e.lost.take();
        if e.ranges.is_empty() {
            self.files.remove(key);
        }
        why
    }

    /// Every held range, by file and owner (what a reclaim re-sends).
    pub(crate) fn all(&self) -> Vec<(Key, Range)> {
        let mut v: Vec<(Key, Range)> = self
            .files
            .iter()
            .flat_map(|(k, e)| e.ranges.ranges().iter().map(move |r| (k.clone(), *r)))
            .collect();
        v.sort_by(|a, b| (&a.0 .0, a.1.start).cmp(&(&b.0 .0, b.1.start)));
        v
    }

    /// True when no range is held (lost marks may remain).
    pub(crate) fn is_empty(&self) -> bool {
        self.files.values().all(|e| e.ranges.is_empty())
    }
}

/// What the server's answer to NLM4_TEST of a held range, asked in the
/// name of a probe owner that holds nothing, says about the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// The server still holds it for us: it did not restart.
    StillHeld,
    /// The server is in its grace period (it restarted): reclaim it.
    Reclaim,
    /// Our lock cannot be told apart from another owner's shared lock
    /// that the server named: ask for it again (reclaim=false), which is
    /// granted at once if it is still ours.
    Relock,
    /// The server no longer holds it and is past its grace period (or
    /// another owner holds a conflicting lock): lost.
    Lost(String),
}

/// Judges NLM4_TEST (exclusive, probe owner) of `r` held by `owner`.
pub(crate) fn judge_test(
    owner: &NlmOwner,
    r: Range,
    stat: nlm4_stats,
    holder: Option<&nlm4_holder>,
) -> Check {
    match (stat, holder) {
        (nlm4_stats::NLM4_DENIED, Some(h)) if h.svid == owner.svid && h.oh.0 == owner.oh => {
            Check::StillHeld
        }
        // Another reader of the range, named in our place: ours may be
        // there too.
        (nlm4_stats::NLM4_DENIED, Some(h)) if !r.exclusive && !h.exclusive => Check::Relock,
        (nlm4_stats::NLM4_DENIED, _) => Check::Lost(
            "the server no longer holds it for this owner: another owner holds a conflicting \
             lock"
                .to_owned(),
        ),
        (nlm4_stats::NLM4_DENIED_GRACE_PERIOD, _) => Check::Reclaim,
        (nlm4_stats::NLM4_GRANTED, _) => Check::Lost(
            "the server no longer holds it (it restarted and its grace period, when locks \
             are reclaimed, is over)"
                .to_owned(),
        ),
        (status, _) => Check::Lost(format!("NLM4_TEST of the held range: {status:?}")),
    }
}

/// NLM4_TEST of a range still held, asked in the name of its owner
/// itself (after the probe owner's test named the owner as the holder):
/// its own lock never conflicts, unless the server sees the call as
/// another client's — one that keys clients by the caller's address, not
/// its host name, after the calls moved to another path. Then why the
/// lock cannot be used from here.
pub(crate) fn judge_own_test(
    owner: &NlmOwner,
    stat: nlm4_stats,
    holder: Option<&nlm4_holder>,
) -> Option<String> {
    match (stat, holder) {
        (nlm4_stats::NLM4_DENIED, Some(h)) if h.svid == owner.svid && h.oh.0 == owner.oh => Some(
            "the server names this owner's lock as another client's since lock calls moved to \
             another path: it keys lock clients by address, not host name (Ganesha: \
             NSM_Use_Caller_Name = true), so the lock cannot be used or released from here"
                .to_owned(),
        ),
        _ => None,
    }
}

/// What to do after NLM4_LOCK of a held range (`reclaim` as sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// Held again.
    Held,
    /// NLM4_DENIED_GRACE_PERIOD: ask again after a pause (a reclaim: at
    /// most [`GRACE_RETRIES`] times, then lost; a plain lock: the server
    /// restarted, so reclaim).
    Again,
    /// Lost, for this reason.
    Lost(String),
}

/// A reclaim answered NLM4_DENIED_GRACE_PERIOD is asked again this many
/// times (a second apart) before the lock counts as lost: a server
/// answers it to a reclaim once its grace period is over.
pub(crate) const GRACE_RETRIES: u32 = 5;

/// Judges NLM4_LOCK of a held range sent with `reclaim`.
pub(crate) fn judge_lock(reclaim: bool, stat: nlm4_stats) -> Next {
    match stat {
        nlm4_stats::NLM4_GRANTED => Next::Held,
        nlm4_stats::NLM4_DENIED_GRACE_PERIOD => Next::Again,
        nlm4_stats::NLM4_DENIED if reclaim => Next::Lost(
            "the server refused its reclaim after a restart: another owner holds a \
             conflicting lock"
                .to_owned(),
        ),
        nlm4_stats::NLM4_DENIED => Next::Lost(
            "the server no longer holds it and another owner holds a conflicting lock".to_owned(),
        ),
        status if reclaim => Next::Lost(format!(
            "the server refused its reclaim after a restart: {status:?}"
        )),
        status => Next::Lost(format!("asked again, the server answered {status:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use directnfs_wire::nlm4::netobj;

    fn key(n: u8) -> Key {
        (vec![n], NlmOwner::process_of(7))
    }

    fn ranges(h: &Held, k: &Key) -> Vec<(u64, u64, bool)> {
        h.all()
            .into_iter()
            .filter(|(kk, _)| kk == k)
            .map(|(_, r)| (r.start, r.end, r.exclusive))
            .collect()
    }

    #[test]
    fn the_table_follows_posix_lock_and_unlock() {
        let mut h = Held::default();
        let k = key(1);
        h.locked(&k, Range::of(0, 100, true));
        assert_eq!(ranges(&h, &k), [(0, 100, true)]);
        // Unlock in the middle splits.
        h.unlocked(&k, 40, 50);
        assert_eq!(ranges(&h, &k), [(0, 40, true), (50, 100, true)]);
        // A shared lock over part of it downgrades that part only.
        h.locked(&k, Range::of(20, 40, false));
        assert_eq!(
            ranges(&h, &k),
            [(0, 20, true), (20, 60, false), (60, 100, true)]
        );
        // An exclusive lock to the end replaces and merges.
        h.locked(&k, Range::of(10, 0, true));
        assert_eq!(ranges(&h, &k), [(0, u64::MAX, true)]);
        assert_eq!(h.all()[0].1.nlm4_offset_len(), (0, 0));
        // Other files and owners are apart.
        let other = (vec![1], NlmOwner::process_of(8));
        h.locked(&other, Range::of(5, 1, false));
        h.unlocked(&k, 0, u64::MAX);
        assert!(ranges(&h, &k).is_empty());
        assert_eq!(ranges(&h, &other), [(5, 6, false)]);
        assert!(!h.is_empty());
        h.unlocked(&other, 0, u64::MAX);
        assert!(h.is_empty());
        // A length running past 2^64 is "to the end".
        assert_eq!(
            Range::of(u64::MAX - 1, 10, true).nlm4_offset_len(),
            (u64::MAX - 1, 0)
        );
    }

    #[test]
    fn a_lost_range_leaves_the_table_until_acknowledged() {
        let mut h = Held::default();
        let k = key(2);
        h.locked(&k, Range::of(0, 10, true));
        h.locked(&k, Range::of(20, 10, false));
        h.lose(&k, Range::of(0, 10, true), "refused");
        assert_eq!(ranges(&h, &k), [(20, 30, false)]);
        assert_eq!(h.lost(&k), Some("bytes 0..10, exclusive: refused"));
        assert!(h.lost(&key(3)).is_none());
        assert_eq!(
            h.acknowledge(&k).as_deref(),
            Some("bytes 0..10, exclusive: refused")
        );
        assert!(h.lost(&k).is_none());
        // Lost marks alone do not keep the table busy.
        h.unlocked(&k, 0, u64::MAX);
        h.lose(&k, Range::of(0, 0, true), "gone");
        assert!(h.is_empty());
        assert!(h.lost(&k).is_some());
    }

    fn holder(owner: &NlmOwner, exclusive: bool) -> nlm4_holder {
        nlm4_holder {
            exclusive,
            svid: owner.svid,
            oh: netobj(owner.oh.clone()),
            l_offset: 0,
            l_len: 0,
        }
    }

    #[test]
    fn an_owners_own_test_naming_itself_means_another_client() {
        let me = NlmOwner::process_of(7);
        let other = NlmOwner::process_of(8);
        assert_eq!(judge_own_test(&me, nlm4_stats::NLM4_GRANTED, None), None);
        let h = holder(&other, true);
        assert_eq!(judge_own_test(&me, nlm4_stats::NLM4_DENIED, Some(&h)), None);
        let h = holder(&me, true);
        let why = judge_own_test(&me, nlm4_stats::NLM4_DENIED, Some(&h)).unwrap();
        assert!(why.contains("NSM_Use_Caller_Name"), "{why}");
    }

    #[test]
    fn the_test_probe_tells_held_grace_and_lost_apart() {
        let me = NlmOwner::process_of(7);
        let other = NlmOwner::process_of(8);
        let x = Range::of(0, 0, true);
        let s = Range::of(0, 0, false);
        assert_eq!(
            judge_test(&me, x, nlm4_stats::NLM4_DENIED, Some(&holder(&me, true))),
            Check::StillHeld
        );
        assert_eq!(
            judge_test(&me, x, nlm4_stats::NLM4_DENIED_GRACE_PERIOD, None),
            Check::Reclaim
        );
        // Forgotten, grace over: never taken again silently.
        assert!(matches!(
            judge_test(&me, x, nlm4_stats::NLM4_GRANTED, None),
            Check::Lost(_)
        ));
        assert!(matches!(
            judge_test(&me, x, nlm4_stats::NLM4_DENIED, Some(&holder(&other, true))),
            Check::Lost(_)
        ));
        assert_eq!(
            judge_test(
                &me,
                s,
                nlm4_stats::NLM4_DENIED,
                Some(&holder(&other, false))
            ),
            Check::Relock
        );
        assert!(matches!(
            judge_test(&me, x, nlm4_stats::NLM4_STALE_FH, None),
            Check::Lost(_)
        ));
    }

    #[test]
    fn a_reclaim_is_held_retried_in_grace_or_lost() {
        assert_eq!(judge_lock(true, nlm4_stats::NLM4_GRANTED), Next::Held);
        assert_eq!(
            judge_lock(true, nlm4_stats::NLM4_DENIED_GRACE_PERIOD),
            Next::Again
        );
        assert_eq!(
            judge_lock(false, nlm4_stats::NLM4_DENIED_GRACE_PERIOD),
            Next::Again
        );
        let Next::Lost(why) = judge_lock(true, nlm4_stats::NLM4_DENIED) else {
            panic!()
        };
        assert!(why.contains("refused its reclaim"), "{why}");
        assert!(matches!(
            judge_lock(false, nlm4_stats::NLM4_DENIED),
            Next::Lost(_)
        ));
        assert!(matches!(
            judge_lock(true, nlm4_stats::NLM4_DENIED_NOLOCKS),
            Next::Lost(_)
        ));
    }
}
