//! The user's ticket cache through the system's MIT Kerberos library
//! (`libkrb5.so.3`, loaded at first use like the GSS-API library): whose
//! tickets it holds, for the messages of a mount whose ticket ran out, and
//! the renewal of a renewable ticket (what `kinit -R` does) before it
//! ends, so that a user's `kinit -r` ticket lasts as long as the KDC lets
//! it be renewed.
//!
//! A renewal replaces the cache's contents (its ticket-granting ticket
//! renewed, the service tickets got from the old one dropped: the next
//! context gets a service ticket that ends with the renewed one). It
//! stores the renewed ticket only when it ends later than the one it
//! renews: a KDC that renews a ticket whose renewable life is over hands
//! back one that ends at once, which must never replace a valid one.

use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libloading::Library;

use super::library_fn;

type Krb5Error = i32;
type Krb5Context = *mut c_void;
type Krb5Ccache = *mut c_void;
type Krb5Principal = *mut c_void;

type InitContext = unsafe extern "C" fn(*mut Krb5Context) -> Krb5Error;
type FreeContext = unsafe extern "C" fn(Krb5Context);
type CcDefault = unsafe extern "C" fn(Krb5Context, *mut Krb5Ccache) -> Krb5Error;
type CcClose = unsafe extern "C" fn(Krb5Context, Krb5Ccache) -> Krb5Error;
type CcGetPrincipal =
    unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut Krb5Principal) -> Krb5Error;
type CcGetFullName = unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut *mut c_char) -> Krb5Error;
type CcInitialize = unsafe extern "C" fn(Krb5Context, Krb5Ccache, Krb5Principal) -> Krb5Error;
type CcStoreCred = unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut Creds) -> Krb5Error;
type FreePrincipal = unsafe extern "C" fn(Krb5Context, Krb5Principal);
type UnparseName = unsafe extern "C" fn(Krb5Context, Krb5Principal, *mut *mut c_char) -> Krb5Error;
type FreeString = unsafe extern "C" fn(Krb5Context, *mut c_char);
type GetRenewedCreds = unsafe extern "C" fn(
    Krb5Context,
    *mut Creds,
    Krb5Principal,
    Krb5Ccache,
    *const c_char,
) -> Krb5Error;
type FreeCredContents = unsafe extern "C" fn(Krb5Context, *mut Creds);
type Cursor = *mut c_void;
type CcStartSeqGet = unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut Cursor) -> Krb5Error;
type CcNextCred =
    unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut Cursor, *mut Creds) -> Krb5Error;
type CcEndSeqGet = unsafe extern "C" fn(Krb5Context, Krb5Ccache, *mut Cursor) -> Krb5Error;
type GetErrorMessage = unsafe extern "C" fn(Krb5Context, Krb5Error) -> *const c_char;
type FreeErrorMessage = unsafe extern "C" fn(Krb5Context, *const c_char);

/// MIT's `krb5_creds` (krb5.h) on LP64, up to the ticket times, then room
/// to spare: the library fills it, this module reads only the times and
/// hands it back to the library to store and free.
#[repr(C)]
struct Creds {
    magic: i32,
    client: Krb5Principal,
    server: Krb5Principal,
    /// `krb5_keyblock`: magic, enctype, length, contents.
    keyblock: [u64; 3],
    authtime: i32,
    starttime: i32,
    endtime: i32,
    renew_till: i32,
    /// is_skey, ticket_flags, addresses, ticket, second_ticket, authdata
    /// (56 bytes on LP64), and more room than any version needs.
    rest: [u64; 32],
}

/// The library's entry points, resolved once per process.
struct Api {
    init_context: InitContext,
    free_context: FreeContext,
    cc_default: CcDefault,
    cc_close: CcClose,
    cc_get_principal: CcGetPrincipal,
    cc_get_full_name: CcGetFullName,
    cc_initialize: CcInitialize,
    cc_store_cred: CcStoreCred,
    free_principal: FreePrincipal,
    unparse_name: UnparseName,
    free_unparsed_name: FreeString,
    free_string: FreeString,
    get_renewed_creds: GetRenewedCreds,
    free_cred_contents: FreeCredContents,
    cc_start_seq_get: CcStartSeqGet,
    cc_next_cred: CcNextCred,
    cc_end_seq_get: CcEndSeqGet,
    get_error_message: GetErrorMessage,
    free_error_message: FreeErrorMessage,
    // Keeps the library mapped for the life of the process.
    _lib: Library,
}

/// The library's file name on Debian and most Linux systems.
const LIBRARY: &str = "libkrb5.so.3";

fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    // SAFETY: loading the system Kerberos library runs its initialisers,
    // which have no preconditions.
    let lib =
        unsafe { Library::new(LIBRARY) }.map_err(|e| format!("cannot load {LIBRARY}: {e}"))?;
    // SAFETY: each symbol is looked up with its C signature of MIT's krb5.h;
    // the types above mirror it.
    unsafe {
        Ok(Api {
            init_context: library_fn(&lib, LIBRARY, b"krb5_init_context\0")?,
            free_context: library_fn(&lib, LIBRARY, b"krb5_free_context\0")?,
            cc_default: library_fn(&lib, LIBRARY, b"krb5_cc_default\0")?,
            cc_close: library_fn(&lib, LIBRARY, b"krb5_cc_close\0")?,
            cc_get_principal: library_fn(&lib, LIBRARY, b"krb5_cc_get_principal\0")?,
            cc_get_full_name: library_fn(&lib, LIBRARY, b"krb5_cc_get_full_name\0")?,
            cc_initialize: library_fn(&lib, LIBRARY, b"krb5_cc_initialize\0")?,
            cc_store_cred: library_fn(&lib, LIBRARY, b"krb5_cc_store_cred\0")?,
            free_principal: library_fn(&lib, LIBRARY, b"krb5_free_principal\0")?,
            unparse_name: library_fn(&lib, LIBRARY, b"krb5_unparse_name\0")?,
            free_unparsed_name: library_fn(&lib, LIBRARY, b"krb5_free_unparsed_name\0")?,
            free_string: library_fn(&lib, LIBRARY, b"krb5_free_string\0")?,
            get_renewed_creds: library_fn(&lib, LIBRARY, b"krb5_get_renewed_creds\0")?,
            free_cred_contents: library_fn(&lib, LIBRARY, b"krb5_free_cred_contents\0")?,
            cc_start_seq_get: library_fn(&lib, LIBRARY, b"krb5_cc_start_seq_get\0")?,
            cc_next_cred: library_fn(&lib, LIBRARY, b"krb5_cc_next_cred\0")?,
            cc_end_seq_get: library_fn(&lib, LIBRARY, b"krb5_cc_end_seq_get\0")?,
            get_error_message: library_fn(&lib, LIBRARY, b"krb5_get_error_message\0")?,
            free_error_message: library_fn(&lib, LIBRARY, b"krb5_free_error_message\0")?,
            _lib: lib,
        })
    }
}

/// The default ticket cache (`KRB5CCNAME`, else the system's default),
/// open, with its library context; both released on drop.
struct Cache {
    api: &'static Api,
    ctx: Krb5Context,
    cc: Krb5Ccache,
}

impl Cache {
    fn open() -> Result<Self, String> {
        let api = api()?;
        let mut ctx: Krb5Context = ptr::null_mut();
        // SAFETY: an out-pointer; the context is freed in Drop.
        let code = unsafe { (api.init_context)(&mut ctx) };
        if code != 0 || ctx.is_null() {
            return Err(format!("krb5_init_context failed ({code})"));
        }
        let mut cache = Self {
            api,
            ctx,
            cc: ptr::null_mut(),
        };
        // SAFETY: a live context and an out-pointer closed in Drop.
        let code = unsafe { (api.cc_default)(ctx, &mut cache.cc) };
        cache.check("krb5_cc_default", code)?;
        Ok(cache)
    }

    /// The cache's name, `TYPE:residual`.
    fn name(&self) -> Option<String> {
        let mut name: *mut c_char = ptr::null_mut();
        // SAFETY: live handles; the string is freed below.
        let code = unsafe { (self.api.cc_get_full_name)(self.ctx, self.cc, &mut name) };
        if code != 0 || name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated string the library made.
        let text = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: freed once, as the library allocated it.
        unsafe { (self.api.free_string)(self.ctx, name) };
        Some(text)
    }

    /// The principal whose tickets the cache holds.
    fn principal(&self) -> Result<Principal<'_>, String> {
        let mut p: Krb5Principal = ptr::null_mut();
        // SAFETY: live handles; the principal is freed by `Principal`.
        let code = unsafe { (self.api.cc_get_principal)(self.ctx, self.cc, &mut p) };
        self.check("krb5_cc_get_principal", code)?;
        Ok(Principal { cache: self, p })
    }

    fn check(&self, call: &str, code: Krb5Error) -> Result<(), String> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: a live context; the message is freed below.
        let msg = unsafe { (self.api.get_error_message)(self.ctx, code) };
        let text = if msg.is_null() {
            format!("error {code}")
        } else {
            // SAFETY: a NUL-terminated string the library made; freed once.
            let t = unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned();
            unsafe { (self.api.free_error_message)(self.ctx, msg) };
            t
        };
        Err(format!("{call}: {text}"))
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // SAFETY: the handles are ours and released once.
        unsafe {
            if !self.cc.is_null() {
                (self.api.cc_close)(self.ctx, self.cc);
            }
            (self.api.free_context)(self.ctx);
        }
    }
}

/// A principal the library allocated, freed on drop.
struct Principal<'c> {
    cache: &'c Cache,
    p: Krb5Principal,
}

impl Principal<'_> {
    fn name(&self) -> String {
        let api = self.cache.api;
        let mut name: *mut c_char = ptr::null_mut();
        // SAFETY: live handles; the string is freed below.
        let code = unsafe { (api.unparse_name)(self.cache.ctx, self.p, &mut name) };
        if code != 0 || name.is_null() {
            return "(a principal without a printable name)".into();
        }
        // SAFETY: a NUL-terminated string the library made; freed once.
        let text = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        unsafe { (api.free_unparsed_name)(self.cache.ctx, name) };
        text
    }
}

impl Drop for Principal<'_> {
    fn drop(&mut self) {
        // SAFETY: freed once, as the library allocated it.
        unsafe { (self.cache.api.free_principal)(self.cache.ctx, self.p) };
    }
}

/// The default cache's name and principal, for a message: `the ticket
/// cache FILE:/tmp/krb5cc_1000 (user@REALM)`; what is known of it when the
/// cache cannot be read.
pub fn describe() -> String {
    let Ok(cache) = Cache::open() else {
        return "the ticket cache (KRB5CCNAME)".into();
    };
    let name = cache.name().unwrap_or_else(|| "(KRB5CCNAME)".into());
    let who = cache.principal().map(|p| p.name());
    match who {
        Ok(who) => format!("the ticket cache {name} ({who})"),
        Err(_) => format!("the ticket cache {name} (empty)"),
    }
}

/// Whether the default cache holds a ticket that has not ended (read
/// only: nothing is written to the cache, unlike a context attempt,
/// which leaves entries in it each time). True when the library cannot
/// tell (the GSS-API library then decides).
pub fn holds_a_ticket() -> bool {
    /// Entries read at most (a cache holds a few dozen).
    const MAX_ENTRIES: usize = 100_000;
    let Ok(cache) = Cache::open() else {
        return true;
    };
    let api = cache.api;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut cursor: Cursor = ptr::null_mut();
    // SAFETY: live handles; the cursor is ended below.
    if unsafe { (api.cc_start_seq_get)(cache.ctx, cache.cc, &mut cursor) } != 0 {
        // No cache, or one that cannot be read: no ticket.
        return false;
    }
    let mut found = false;
    for _ in 0..MAX_ENTRIES {
        // SAFETY: all-zero is the empty `krb5_creds`; see `Creds`.
        let mut creds: Creds = unsafe { std::mem::zeroed() };
        // SAFETY: live handles and cursor; the contents are freed below.
        if unsafe { (api.cc_next_cred)(cache.ctx, cache.cc, &mut cursor, &mut creds) } != 0 {
            break;
        }
        // Configuration entries have no times (0).
        let ends = u64::from(creds.endtime as u32);
        // SAFETY: the contents the library filled, freed once.
        unsafe { (api.free_cred_contents)(cache.ctx, &mut creds) };
        if ends > now {
            found = true;
            break;
        }
    }
    // SAFETY: the cursor started above, ended once.
    unsafe { (api.cc_end_seq_get)(cache.ctx, cache.cc, &mut cursor) };
    found
}

/// Renews the default cache's ticket-granting ticket (`kinit -R`) and
/// stores it, if the renewed ticket ends after `after`: the time it ends
/// then. An error says why not (not renewable, its renewable life over,
/// the KDC unreachable), with the cache's name and principal.
pub fn renew(after: SystemTime) -> Result<SystemTime, String> {
    let cache = Cache::open()?;
    let principal = cache.principal()?;
    let who = || {
        format!(
            "{} in {}",
            principal.name(),
            cache.name().unwrap_or_else(|| "the ticket cache".into())
        )
    };
    let api = cache.api;
    // SAFETY: all-zero is the empty `krb5_creds` the library expects.
    let mut creds: Creds = unsafe { std::mem::zeroed() };
    // SAFETY: live handles; `creds` is large enough for the library's
    // struct (see `Creds`) and its contents are freed below.
    let code = unsafe {
        (api.get_renewed_creds)(cache.ctx, &mut creds, principal.p, cache.cc, ptr::null())
    };
    cache
        .check("krb5_get_renewed_creds", code)
        .map_err(|e| format!("cannot renew the ticket of {}: {e}", who()))?;
    let ends = UNIX_EPOCH + Duration::from_secs(u64::from(creds.endtime as u32));
    let plausible = creds.endtime > 0
        && creds.authtime > 0
        && creds.endtime >= creds.authtime
        && creds.renew_till >= creds.endtime;
    let result = if !plausible {
        Err(format!(
            "the renewed ticket of {} has times this client cannot read",
            who()
        ))
    } else if ends <= after {
        Err(format!(
            "the ticket of {} is not renewable past its end (kinit -r asks for a renewable one)",
            who()
        ))
    } else {
        // SAFETY: live handles; `creds` is the library's own.
        let code = unsafe { (api.cc_initialize)(cache.ctx, cache.cc, principal.p) };
        cache
            .check("krb5_cc_initialize", code)
            .and_then(|()| {
                // SAFETY: as above.
                let code = unsafe { (api.cc_store_cred)(cache.ctx, cache.cc, &mut creds) };
                cache.check("krb5_cc_store_cred", code)
            })
            .map(|()| ends)
    };
    // SAFETY: the contents the library filled, freed once.
    unsafe { (api.free_cred_contents)(cache.ctx, &mut creds) };
    result
}
