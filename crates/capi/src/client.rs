//! Clients: mounting (`dnfs_client_open_url`, `dnfs_client_open_config`),
//! closing, the export and target names, and `dnfs_stats_json` with the
//! per-client counters of calls made through the C library.

use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use dnfs::Client;

use crate::ffi::{arg_str, ffi_try, Failure, FfiResult};
use crate::owner::arg_own;

static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

/// Calls made through the C library, per client (`dnfs_stats_json`).
#[derive(Debug, Default)]
pub(crate) struct OpStats {
    pub(crate) reads: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) bytes_read: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) fsyncs: AtomicU64,
    pub(crate) metadata_ops: AtomicU64,
    pub(crate) batch_ops: AtomicU64,
    pub(crate) errors: AtomicU64,
}

impl OpStats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts an error on its way out.
    pub(crate) fn check<T>(&self, r: dnfs::Result<T>) -> FfiResult<T> {
        r.map_err(|e| {
            Self::add(&self.errors, 1);
            Failure::from(e)
        })
    }
}

/// `dnfs_client`: a mounted export.
#[derive(Debug)]
pub struct DnfsClient {
    pub(crate) client: Client,
    /// The process it belongs to (`owner.rs`).
    pub(crate) generation: u64,
    pub(crate) id: u64,
    pub(crate) stats: Arc<OpStats>,
    export: CString,
    target: CString,
}

pub(crate) fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

fn boxed_client(client: Client) -> *mut DnfsClient {
    let export = cstring(client.export());
    let target = cstring(client.target_path());
    Box::into_raw(Box::new(DnfsClient {
        client,
        generation: crate::owner::current(),
        id: NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed),
        stats: Arc::new(OpStats::default()),
        export,
        target,
    }))
}

impl crate::owner::Owned for DnfsClient {
    fn generation(&self) -> u64 {
        self.generation
    }
}

impl DnfsClient {
    pub(crate) fn path(&self, path: &str) -> String {
        dnfs::config::relative_to(self.client.target_path(), path)
    }
}

/// See `dnfs_client_open_url` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_client_open_url(url: *const c_char) -> *mut DnfsClient {
    ffi_try(|| {
        // SAFETY: a C string valid for this call (header contract).
        let url = unsafe { arg_str(url, "url") }?;
        let client = Client::connect(url)?;
        Ok(boxed_client(client))
    })
}

/// See `dnfs_client_open_config` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_client_open_config(
    config_path: *const c_char,
    path: *const c_char,
) -> *mut DnfsClient {
    ffi_try(|| {
        let config = if config_path.is_null() {
            None
        } else {
            // SAFETY: non-NULL C string valid for this call.
            Some(Path::new(unsafe { arg_str(config_path, "config_path") }?))
        };
        // SAFETY: a C string valid for this call.
        let path = unsafe { arg_str(path, "path") }?;
        let tab = dnfs::config::find_config(config)
            .map_err(dnfs::Error::from)?
            .ok_or_else(|| {
                Failure::invalid(format!(
                    "no dnfstab found (looked at ${}, {})",
                    dnfs::config::ENV_VAR,
                    dnfs::config::DEFAULT_PATHS.join(", ")
                ))
            })?;
        let located = tab
            .locate(path)
            .map_err(dnfs::Error::from)?
            .ok_or_else(|| {
                dnfs::Error::Config(dnfs::config::ConfigError::NotUnderMount {
                    name: path.to_string(),
                    file: tab.source.clone(),
                })
            })?;
        let client = Client::mount(&located.target)?;
        Ok(boxed_client(client))
    })
}

/// See `dnfs_client_close` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_client_close(client: *mut DnfsClient) -> c_int {
    ffi_try(|| {
        if !client.is_null() {
            // The parent's, in the child of a fork: left alone.
            // SAFETY: live until closed, per the header.
            crate::owner::check(unsafe { &*client }, "client")?;
            // SAFETY: created by Box::into_raw in this library and, per
            // the header, closed once.
            drop(unsafe { Box::from_raw(client) });
        }
        Ok(0)
    })
}

/// See `dnfs_client_export` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_client_export(client: *const DnfsClient) -> *const c_char {
    // SAFETY: NULL or a live client (header contract).
    match unsafe { client.as_ref() } {
        Some(c) => c.export.as_ptr(),
        None => std::ptr::null(),
    }
}

/// See `dnfs_client_target` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_client_target(client: *const DnfsClient) -> *const c_char {
    // SAFETY: NULL or a live client (header contract).
    match unsafe { client.as_ref() } {
        Some(c) => c.target.as_ptr(),
        None => std::ptr::null(),
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn stats_json(c: &DnfsClient) -> String {
    let s = &c.stats;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let limits = c.client.limits();
    let options = c.client.options();
    format!(
        concat!(
            "{{\"export\":{},\"target\":{},\"rtmax\":{},\"wtmax\":{},",
            "\"server_rtmax\":{},\"server_wtmax\":{},\"connections\":{},\"stable\":{},",
            "\"ops\":{{\"reads\":{},\"writes\":{},\"bytes_read\":{},\"bytes_written\":{},",
            "\"fsyncs\":{},\"metadata_ops\":{},\"batch_ops\":{},\"errors\":{}}},",
            "\"engine\":{}}}"
        ),
        json_str(c.client.export()),
        json_str(c.client.target_path()),
        limits.rtmax,
        limits.wtmax,
        limits.server_rtmax,
        limits.server_wtmax,
        options.connections,
        json_str(&options.stable.to_string()),
        get(&s.reads),
        get(&s.writes),
        get(&s.bytes_read),
        get(&s.bytes_written),
        get(&s.fsyncs),
        get(&s.metadata_ops),
        get(&s.batch_ops),
        get(&s.errors),
        // The client's own counters (servers, paths, channels, files, with
        // latency histograms): the `dnfs stats --json` model.
        serde_json::to_string(&c.client.stats()).unwrap_or_else(|_| "null".to_string()),
    )
}

/// See `dnfs_stats_json` in directnfs.h.
#[no_mangle]
pub unsafe extern "C" fn dnfs_stats_json(
    client: *const DnfsClient,
    buf: *mut c_char,
    len: usize,
) -> isize {
    ffi_try(|| {
        // SAFETY: NULL or a live client (header contract).
        let c = unsafe { arg_own(client, "client") }?;
        if buf.is_null() && len > 0 {
            return Err(Failure::invalid("buf is NULL but len > 0"));
        }
        let text = stats_json(c);
        if len > 0 {
            let n = text.len().min(len - 1);
            // SAFETY: buf is valid for `len` bytes (header contract) and
            // n + 1 <= len; the source is our own string.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        Ok(text.len() as isize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
