//! The local file system baseline: pread/pwrite on the exported file
//! (through the page cache; writes use O_DSYNC, durable like FILE_SYNC).
//! Synchronous: a session of queue depth Q runs Q threads of depth 1.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Duration;

use super::{alloc_buf, Done, Kind, Session};
use crate::bench::job::Job;

#[derive(Debug)]
pub struct LocalSession {
    file: std::fs::File,
    bufs: Vec<Box<[u8]>>,
    done: Vec<Done>,
}

impl LocalSession {
    pub fn open(job: &Job, depth: usize, buf_len: usize) -> Result<Self, String> {
        let path = job
            .loc
            .local_path
            .as_deref()
            .ok_or("the local engine needs --local-path")?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            // redo --fsync-every: the page cache, then fdatasync.
            .custom_flags(if job.fsync_every > 0 {
                0
            } else {
                libc::O_DSYNC
            })
            .open(path)
            .map_err(|e| format!("open {path}: {e}"))?;
        Ok(Self {
            file,
            bufs: (0..depth).map(|_| alloc_buf(buf_len)).collect(),
            done: Vec::new(),
        })
    }
}

impl Session for LocalSession {
    fn depth(&self) -> usize {
        self.bufs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        &mut self.bufs[slot]
    }

    fn submit(&mut self, slot: usize, kind: Kind, offset: u64, len: usize) -> Result<(), String> {
        let buf = &mut self.bufs[slot][..len];
        let r = match kind {
            Kind::Read => self.file.read_at(buf, offset),
            Kind::Write => self.file.write_at(buf, offset),
        };
        self.done.push((slot, r.map_err(|e| e.to_string())));
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Done>, _min: usize, _timeout: Duration) -> Result<(), String> {
        out.append(&mut self.done);
        Ok(())
    }

    fn fsync(&mut self) -> Result<(), String> {
        self.file.sync_data().map_err(|e| format!("fdatasync: {e}"))
    }
}
