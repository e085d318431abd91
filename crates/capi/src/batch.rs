//! Batches: many I/Os in flight, completions reaped in groups (the
//! aio_waitn model); the buffer rules are in the header's section.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dnfs::{Batch, Completion};

use crate::client::{DnfsClient, OpStats};
use crate::ffi::{self, ffi_try, Failure, FfiResult};
use crate::file::{len_arg, offset_arg, DnfsFile};
use crate::owner::arg_own;

/// `dnfs_batch`: asynchronous I/Os of one client.
#[derive(Debug)]
pub struct DnfsBatch {
    /// The process it belongs to (`owner.rs`).
    generation: u64,
    client_id: u64,
    stats: Arc<OpStats>,
    state: Mutex<BatchState>,
}

#[derive(Debug)]
struct BatchState {
    /// `'static`: the buffers are the C caller's, kept valid by the
    /// header's contract until their completion is returned.
    batch: Batch<'static>,
    /// Completions collected but not yet handed out (more than `max_out`).
    overflow: VecDeque<Completion>,
    /// Completions of the last wait (kept for its capacity: no allocation
    /// per `dnfs_batch_wait`).
    scratch: Vec<Completion>,
}

/// `struct dnfs_completion`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DnfsCompletion {
    pub token: u64,
    pub result: i64,
}

/// See `dnfs_batch_new` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_new(client: *mut DnfsClient) -> *mut DnfsBatch {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        Ok(Box::into_raw(Box::new(DnfsBatch {
            generation: c.generation,
            client_id: c.id,
            stats: Arc::clone(&c.stats),
            state: Mutex::new(BatchState {
                batch: Batch::new(&c.client),
                overflow: VecDeque::new(),
                scratch: Vec::new(),
            }),
        })))
    })
}

impl crate::owner::Owned for DnfsBatch {
    fn generation(&self) -> u64 {
        self.generation
    }
}

impl DnfsBatch {
    fn state(&self) -> std::sync::MutexGuard<'_, BatchState> {
        // A panic while holding the lock was caught by ffi_try; the state
        // is still consistent (Batch keeps its own invariants).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_file(&self, f: &DnfsFile) -> FfiResult<()> {
        if f.client_id != self.client_id {
            return Err(Failure {
                errno: libc::EXDEV,
                message: format!(
                    "{}: file belongs to another client than the batch",
                    f.file.path()
                ),
            });
        }
        Ok(())
    }
}

/// See `dnfs_batch_read` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_read(
    batch: *mut DnfsBatch,
    file: *mut DnfsFile,
    buf: *mut c_void,
    len: usize,
    offset: i64,
    token: u64,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or live objects (header contract).
        let (b, f) = unsafe { (arg_own(batch, "batch")?, arg_own(file, "file")?) };
        b.check_file(f)?;
        let len = len_arg(len)?;
        let offset = offset_arg(offset)?;
        let slice: &'static mut [u8] = if len == 0 {
            &mut []
        } else if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        } else {
            // SAFETY: the header makes the caller keep buf valid and
            // untouched until this read's completion is returned by
            // dnfs_batch_wait or dnfs_batch_free returns; Batch's Drop
            // waits for every piece, so no write lands after that.
            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
        };
        // SAFETY: `Batch::read`'s contract is that the batch is dropped or
        // the read reaped before the buffer is let go. The buffer is the C
        // caller's, who by the header's contract keeps it until the read's
        // completion comes out of dnfs_batch_wait or dnfs_batch_free returns
        // (which drops the batch, waiting for every read); this batch lives
        // in a Box only dnfs_batch_free frees.
        let submitted = unsafe { b.state().batch.read(&f.file, offset, slice, token) };
        b.stats.check(submitted)?;
        OpStats::add(&b.stats.batch_ops, 1);
        Ok(0)
    })
}

/// See `dnfs_batch_write` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_write(
    batch: *mut DnfsBatch,
    file: *mut DnfsFile,
    buf: *const c_void,
    len: usize,
    offset: i64,
    token: u64,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or live objects (header contract).
        let (b, f) = unsafe { (arg_own(batch, "batch")?, arg_own(file, "file")?) };
        b.check_file(f)?;
        let len = len_arg(len)?;
        let offset = offset_arg(offset)?;
        let slice: &'static [u8] = if len == 0 {
            &[]
        } else if buf.is_null() {
            return Err(Failure::invalid("buf is NULL"));
        } else {
            // SAFETY: the caller keeps buf valid and unchanged until the
            // completion (header contract); see dnfs_batch_read.
            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
        };
        b.stats
            .check(b.state().batch.write(&f.file, offset, slice, token))?;
        OpStats::add(&b.stats.batch_ops, 1);
        Ok(0)
    })
}

/// See `dnfs_batch_wait` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_wait(
    batch: *mut DnfsBatch,
    min_nr: c_int,
    timeout_ms: c_int,
    out: *mut DnfsCompletion,
    max_out: c_int,
) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live batch (header contract).
        let b = unsafe { arg_own(batch, "batch") }?;
        if min_nr < 0 {
            return Err(Failure::invalid("min_nr < 0"));
        }
        if max_out < 1 || out.is_null() {
            return Err(Failure::invalid("need out != NULL and max_out >= 1"));
        }
        let max_out = max_out as usize;
        let want = (min_nr as usize).min(max_out);
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let mut st = b.state();
        let need = want.saturating_sub(st.overflow.len());
        // Always collect what is ready, even when `need` is 0.
        let mut done = std::mem::take(&mut st.scratch);
        st.batch.wait_into(&mut done, need, timeout);
        st.overflow.extend(done.drain(..));
        st.scratch = done;
        let n = st.overflow.len().min(max_out);
        for i in 0..n {
            let Some(c) = st.overflow.pop_front() else {
                break;
            };
            let result = match c.result {
                Ok(bytes) => bytes as i64,
                Err(e) => {
                    OpStats::add(&b.stats.errors, 1);
                    let f = Failure::from(e);
                    ffi::record_error(f.errno, &f.message);
                    -(f.errno as i64)
                }
            };
            // SAFETY: out is valid for max_out entries (header contract)
            // and i < n <= max_out.
            unsafe {
                out.add(i).write(DnfsCompletion {
                    token: c.token,
                    result,
                })
            };
        }
        Ok(n as c_int)
    })
}

/// See `dnfs_batch_outstanding` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_outstanding(batch: *mut DnfsBatch) -> c_int {
    ffi_try(|| {
        // SAFETY: NULL or a live batch (header contract).
        let b = unsafe { arg_own(batch, "batch") }?;
        let st = b.state();
        let n = st.batch.outstanding() + st.overflow.len();
        Ok(c_int::try_from(n).unwrap_or(c_int::MAX))
    })
}

/// See `dnfs_batch_free` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_batch_free(batch: *mut DnfsBatch) -> c_int {
    ffi_try(|| {
        if !batch.is_null() {
            // The parent's, in the child of a fork: left alone.
            // SAFETY: live until freed, per the header.
            crate::owner::check(unsafe { &*batch }, "batch")?;
            // SAFETY: created by Box::into_raw in dnfs_batch_new, freed
            // once; dropping the Batch waits for every outstanding I/O.
            drop(unsafe { Box::from_raw(batch) });
        }
        Ok(0)
    })
}
