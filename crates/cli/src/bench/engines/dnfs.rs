//! directnfs through its Batch API (the aio_waitn model): one `Client` per
//! session (its own connections), `depth` I/Os kept in flight.

use std::time::Duration;

use directnfs::{Batch, Client, File, NfsUrl, Target};

use super::{alloc_buf, Done, Kind, Session};
use crate::bench::job::Job;

pub struct DnfsSession {
    /// Declared (and dropped, see `Drop`) before the buffers it borrows.
    batch: Option<Batch<'static>>,
    file: File,
    _client: Client,
    bufs: Vec<Box<[u8]>>,
}

impl std::fmt::Debug for DnfsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnfsSession").field("depth", &self.bufs.len()).finish()
    }
}

/// Mounts the job's export with `connections` channels and opens its file.
pub fn connect(job: &Job, connections: usize) -> Result<(Client, File), String> {
    let loc = &job.loc;
    let url = loc.url.as_deref().ok_or("directnfs needs --target")?;
    let parsed = NfsUrl::parse(url).map_err(|e| e.to_string())?;
    let mut target = Target::from_url(&parsed);
    target.options.connections = connections.max(1);
    if let (Some(export), Some(rel)) = (&loc.export, &loc.rel_path) {
        target.export = Some(export.clone());
        target.path = join(export, rel);
    }
    let client = Client::mount(&target).map_err(|e| format!("directnfs mount {url}: {e}"))?;
    let rel = loc
        .rel_path
        .clone()
        .unwrap_or_else(|| client.target_path().to_string());
    let file = client
        .open(&rel)
        .map_err(|e| format!("directnfs open {rel}: {e}"))?;
    Ok((client, file))
}

fn join(export: &str, rel: &str) -> String {
    let e = export.trim_end_matches('/');
    let r = rel.trim_start_matches('/');
    format!("{e}/{r}")
}

impl DnfsSession {
    pub fn open(job: &Job, depth: usize, buf_len: usize) -> Result<Self, String> {
        let (client, file) = connect(job, job.connections)?;
        let batch = Batch::new(&client);
        Ok(Self {
            batch: Some(batch),
            file,
            _client: client,
            bufs: (0..depth).map(|_| alloc_buf(buf_len)).collect(),
        })
    }
}

impl Session for DnfsSession {
    fn depth(&self) -> usize {
        self.bufs.len()
    }

    fn buf(&mut self, slot: usize) -> &mut [u8] {
        &mut self.bufs[slot]
    }

    fn submit(&mut self, slot: usize, kind: Kind, offset: u64, len: usize) -> Result<(), String> {
        let batch = self.batch.as_mut().ok_or("session closed")?;
        let buf = &mut self.bufs[slot][..len];
        let ptr = buf.as_mut_ptr();
        let r = match kind {
            Kind::Read => {
                // SAFETY: the buffer is heap memory owned by this session that
                // outlives the batch (Drop drops the batch first, which waits
                // for every I/O); the driver does not touch a slot's buffer
                // while its I/O is in flight. The 'static borrow only stands
                // for "until this I/O completes", which Batch cannot express
                // for buffers that are reused.
                let b: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                batch.read(&self.file, offset, b, slot as u64)
            }
            Kind::Write => {
                // SAFETY: as above; the batch only reads the buffer.
                let b: &'static [u8] = unsafe { std::slice::from_raw_parts(ptr, len) };
                batch.write(&self.file, offset, b, slot as u64)
            }
        };
        r.map_err(|e| e.to_string())
    }

    fn reap(&mut self, out: &mut Vec<Done>, timeout: Duration) -> Result<(), String> {
        let batch = self.batch.as_mut().ok_or("session closed")?;
        for c in batch.wait(1, Some(timeout)) {
            out.push((c.token as usize, c.result.map_err(|e| e.to_string())));
        }
        Ok(())
    }
}

impl Drop for DnfsSession {
    fn drop(&mut self) {
        // Waits for every outstanding I/O before the buffers go away.
        drop(self.batch.take());
    }
}
