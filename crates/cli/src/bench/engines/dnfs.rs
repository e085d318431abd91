//! directnfs through its Batch API (the aio_waitn model): one `Client` per
//! session (its own connections), `depth` I/Os kept in flight. redo with
//! `--fsync-every` writes through the blocking `File::write_at` instead
//! (what write-behind speeds up) and calls `File::fsync`.

use std::time::Duration;

use directnfs::{Batch, Client, File};

use super::{Done, Kind, Session};
use crate::bench::job::Job;

pub struct DnfsSession {
    batch: Batch<'static>,
    file: File,
    _client: Client,
    /// Slot buffers; `None` while lent to the batch (owned-buffer I/O: the
    /// buffer comes back with its completion).
    bufs: Vec<Option<Vec<u8>>>,
    cap: usize,
    /// Handed out by `buf()` for a slot whose buffer is in flight (never
    /// happens with the driver; keeps `buf()` total).
    spare: Vec<u8>,
    /// Completions of the last reap (kept for its capacity).
    done: Vec<directnfs::Completion>,
    /// Writes go through `File::write_at` (redo `--fsync-every`); their
    /// outcomes wait here for the next reap.
    blocking: bool,
    finished: Vec<Done>,
}

impl std::fmt::Debug for DnfsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnfsSession")
            .field("depth", &self.bufs.len())
            .finish()
    }
}

/// Mounts the job's export with `connections` channels and opens its file.
pub fn connect(job: &Job, connections: usize) -> Result<(Client, File), String> {
    let loc = &job.loc;
    let arg = loc.url.as_deref().ok_or("directnfs needs --target")?;
    let mut target = super::target_of(arg, loc.config.as_deref())?;
    target.options.connections = connections.max(1);
    if let (Some(export), Some(rel)) = (&loc.export, &loc.rel_path) {
        target.export = Some(export.clone());
        target.path = directnfs::config::join(export, rel);
    }
    let client = Client::mount(&target).map_err(|e| format!("directnfs mount {arg}: {e}"))?;
    let rel = loc
        .rel_path
        .clone()
        .unwrap_or_else(|| client.target_path().to_string());
    let file = client
        .open(&rel)
        .map_err(|e| format!("directnfs open {rel}: {e}"))?;
    Ok((client, file))
}

impl DnfsSession {
    pub fn open(job: &Job, depth: usize, buf_len: usize) -> Result<Self, String> {
        let (client, file) = connect(job, job.connections)?;
        let batch = Batch::new(&client);
        Ok(Self {
            batch,
            file,
            _client: client,
            bufs: (0..depth)
                .map(|_| Some(vec![0u8; buf_len.max(1)]))
                .collect(),
            cap: buf_len.max(1),
            spare: Vec::new(),
            done: Vec::new(),
            blocking: job.fsync_every > 0,
            finished: Vec::new(),
        })
    }
}

impl Session for DnfsSession {
    fn depth(&self) -> usize {
        self.bufs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        match self.bufs.get_mut(slot) {
            Some(Some(b)) => {
                if b.len() < self.cap {
                    if b.capacity() >= self.cap {
                        // SAFETY: every slot buffer starts as `cap` zeroed
                        // bytes and is only ever shortened (`truncate` in
                        // `submit`) or written through (reads), which leaves
                        // its bytes initialized; this only restores the
                        // length. (Re-zeroing up to 64 KiB per redo write
                        // was billed to this engine alone.)
                        unsafe { b.set_len(self.cap) };
                    } else {
                        b.resize(self.cap, 0);
                    }
                }
                b
            }
            _ => &mut self.spare,
        }
    }

    fn submit(&mut self, slot: usize, kind: Kind, offset: u64, len: usize) -> Result<(), String> {
        let mut buf = self
            .bufs
            .get_mut(slot)
            .and_then(Option::take)
            .ok_or_else(|| format!("slot {slot} is busy"))?;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf.truncate(len);
        if self.blocking && kind == Kind::Write {
            let r = self.file.write_at(&buf, offset).map_err(|e| e.to_string());
            if let Some(dst) = self.bufs.get_mut(slot) {
                *dst = Some(buf);
            }
            self.finished.push((slot, r));
            return Ok(());
        }
        let r = match kind {
            Kind::Read => self.batch.read_owned(&self.file, offset, buf, slot as u64),
            Kind::Write => self.batch.write_owned(&self.file, offset, buf, slot as u64),
        };
        r.map_err(|e| e.to_string())
    }

    fn reap(&mut self, out: &mut Vec<Done>, min: usize, timeout: Duration) -> Result<(), String> {
        if !self.finished.is_empty() {
            out.append(&mut self.finished);
            return Ok(());
        }
        let mut done = std::mem::take(&mut self.done);
        self.batch.wait_into(&mut done, min.max(1), Some(timeout));
        for c in done.drain(..) {
            let slot = c.token as usize;
            if let (Some(b), Some(dst)) = (c.buffer, self.bufs.get_mut(slot)) {
                *dst = Some(b);
            }
            out.push((slot, c.result.map_err(|e| e.to_string())));
        }
        self.done = done;
        Ok(())
    }

    fn fsync(&mut self) -> Result<(), String> {
        self.file.fsync().map_err(|e| format!("fsync: {e}"))
    }
}
