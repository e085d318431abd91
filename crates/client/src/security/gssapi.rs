//! The system's MIT GSS-API library (`libgssapi_krb5.so.2`), loaded at the
//! first Kerberos mount: a client that never asks for Kerberos neither
//! links nor loads it. Only the calls RPCSEC_GSS needs (RFC 2744 names):
//! name import, context initiation, MIC make/check, wrap/unwrap.
//!
//! Credentials come from where MIT finds them: the ticket cache
//! (`KRB5CCNAME`), else the client keytab (`KRB5_CLIENT_KTNAME`), from
//! which the library gets a ticket by itself. The realm is the one of
//! `KRB5_CONFIG`.

use std::ffi::{c_int, c_void};
use std::fmt;
use std::ptr;
use std::sync::OnceLock;

use libloading::Library;

type OmUint32 = u32;
type GssName = *mut c_void;
type GssCtx = *mut c_void;

#[repr(C)]
struct GssBuffer {
    length: usize,
    value: *mut c_void,
}

impl GssBuffer {
    fn empty() -> Self {
        Self {
            length: 0,
            value: ptr::null_mut(),
        }
    }

    /// Borrows `data` as an input buffer (GSS-API never writes to one).
    fn input(data: &[u8]) -> Self {
        Self {
            length: data.len(),
            value: data.as_ptr() as *mut c_void,
        }
    }
}

#[repr(C)]
struct GssOid {
    length: OmUint32,
    elements: *mut c_void,
}

/// GSS_C_NT_HOSTBASED_SERVICE, 1.2.840.113554.1.2.1.4 (RFC 2744 §4):
/// names written `service@host`.
const NT_HOSTBASED_SERVICE: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04";
/// The Kerberos V5 mechanism, 1.2.840.113554.1.2.2 (RFC 1964).
const MECH_KRB5: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";

/// Context flags asked for (RFC 2744 §5.19): mutual authentication,
/// integrity and confidentiality. Not replay or sequence detection:
/// RPCSEC_GSS numbers its calls itself and calls may pass each other
/// (RFC 2203 §5.2.2).
const GSS_C_MUTUAL_FLAG: OmUint32 = 2;
const GSS_C_CONF_FLAG: OmUint32 = 16;
const GSS_C_INTEG_FLAG: OmUint32 = 32;

const GSS_S_COMPLETE: OmUint32 = 0;
const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;
/// The routine-error field of a major status (RFC 2744 §3.9.1).
const GSS_ROUTINE_ERROR_MASK: OmUint32 = 0xff << 16;
const GSS_S_NO_CRED: OmUint32 = 7 << 16;
const GSS_S_CREDENTIALS_EXPIRED: OmUint32 = 11 << 16;
const GSS_C_GSS_CODE: c_int = 1;
const GSS_C_MECH_CODE: c_int = 2;

type ImportName =
    unsafe extern "C" fn(*mut OmUint32, *mut GssBuffer, *mut GssOid, *mut GssName) -> OmUint32;
type ReleaseName = unsafe extern "C" fn(*mut OmUint32, *mut GssName) -> OmUint32;
type InitSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    *mut c_void,
    *mut GssCtx,
    GssName,
    *mut GssOid,
    OmUint32,
    OmUint32,
    *mut c_void,
    *mut GssBuffer,
    *mut *mut GssOid,
    *mut GssBuffer,
    *mut OmUint32,
    *mut OmUint32,
) -> OmUint32;
type GetMic = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    OmUint32,
    *mut GssBuffer,
    *mut GssBuffer,
) -> OmUint32;
type VerifyMic = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut GssBuffer,
    *mut GssBuffer,
    *mut OmUint32,
) -> OmUint32;
type Wrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    c_int,
    OmUint32,
    *mut GssBuffer,
    *mut c_int,
    *mut GssBuffer,
) -> OmUint32;
type Unwrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut GssBuffer,
    *mut GssBuffer,
    *mut c_int,
    *mut OmUint32,
) -> OmUint32;
type ReleaseBuffer = unsafe extern "C" fn(*mut OmUint32, *mut GssBuffer) -> OmUint32;
type DeleteSecContext =
    unsafe extern "C" fn(*mut OmUint32, *mut GssCtx, *mut GssBuffer) -> OmUint32;
type DisplayStatus = unsafe extern "C" fn(
    *mut OmUint32,
    OmUint32,
    c_int,
    *mut GssOid,
    *mut OmUint32,
    *mut GssBuffer,
) -> OmUint32;

/// The library's entry points, resolved once per process.
struct Api {
    import_name: ImportName,
    release_name: ReleaseName,
    init_sec_context: InitSecContext,
    get_mic: GetMic,
    verify_mic: VerifyMic,
    wrap: Wrap,
    unwrap: Unwrap,
    release_buffer: ReleaseBuffer,
    delete_sec_context: DeleteSecContext,
    display_status: DisplayStatus,
    // Keeps the library mapped while the pointers above are in use (for
    // the life of the process: it is never dropped).
    _lib: Library,
}

/// The library's file name on Debian and most Linux systems.
const LIBRARY: &str = "libgssapi_krb5.so.2";

fn api() -> Result<&'static Api, GssError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|e| GssError::Library(e.clone()))
}

fn load() -> Result<Api, String> {
    // SAFETY: loading the system GSS-API library runs its initialisers,
    // which have no preconditions.
    let lib = unsafe { Library::new(LIBRARY) }
        .map_err(|e| format!("cannot load {LIBRARY} (install the MIT Kerberos GSS-API library, Debian package libgssapi-krb5-2): {e}"))?;
    // SAFETY: each symbol is looked up with the C signature of RFC 2744
    // and MIT's gssapi.h; the types above mirror it.
    unsafe {
        Ok(Api {
            import_name: *sym(&lib, b"gss_import_name\0")?,
            release_name: *sym(&lib, b"gss_release_name\0")?,
            init_sec_context: *sym(&lib, b"gss_init_sec_context\0")?,
            get_mic: *sym(&lib, b"gss_get_mic\0")?,
            verify_mic: *sym(&lib, b"gss_verify_mic\0")?,
            wrap: *sym(&lib, b"gss_wrap\0")?,
            unwrap: *sym(&lib, b"gss_unwrap\0")?,
            release_buffer: *sym(&lib, b"gss_release_buffer\0")?,
            delete_sec_context: *sym(&lib, b"gss_delete_sec_context\0")?,
            display_status: *sym(&lib, b"gss_display_status\0")?,
            _lib: lib,
        })
    }
}

/// # Safety
/// `T` must be the function type of the symbol `name`.
unsafe fn sym<'l, T>(lib: &'l Library, name: &[u8]) -> Result<libloading::Symbol<'l, T>, String> {
    // SAFETY: the caller names the right type.
    unsafe { lib.get(name) }
        .map_err(|e| format!("{LIBRARY} has no {}: {e}", String::from_utf8_lossy(name)))
}

/// A GSS-API failure, with the library's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GssError {
    /// The library could not be loaded.
    Library(String),
    /// There are no usable credentials (no ticket cache, no client keytab,
    /// or an expired ticket): the user must `kinit` or give a keytab.
    NoCredentials(String),
    /// Any other failure of a GSS-API call.
    Failed {
        /// The call, e.g. "gss_init_sec_context".
        call: &'static str,
        /// The library's major and minor status texts.
        detail: String,
    },
}

impl fmt::Display for GssError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GssError::Library(e) => f.write_str(e),
            GssError::NoCredentials(d) => write!(f, "no Kerberos credentials: {d}"),
            GssError::Failed { call, detail } => write!(f, "{call} failed: {detail}"),
        }
    }
}

impl std::error::Error for GssError {}

/// The text of a major/minor status pair (gss_display_status).
fn status_text(api: &Api, major: OmUint32, minor: OmUint32) -> String {
    let mut parts = Vec::new();
    for (code, kind) in [(major, GSS_C_GSS_CODE), (minor, GSS_C_MECH_CODE)] {
        if kind == GSS_C_MECH_CODE && code == 0 {
            continue;
        }
        let mut ctx: OmUint32 = 0;
        // At most a few messages per code; bounded in case of a library bug.
        for _ in 0..8 {
            let mut min = 0;
            let mut buf = GssBuffer::empty();
            // SAFETY: out-pointers are valid; the buffer is released below.
            let maj = unsafe {
                (api.display_status)(&mut min, code, kind, ptr::null_mut(), &mut ctx, &mut buf)
            };
            if maj != GSS_S_COMPLETE {
                break;
            }
            // SAFETY: the library filled `buf` with `length` bytes.
            parts.push(
                String::from_utf8_lossy(unsafe { take_buffer(api, &mut buf) }.as_slice())
                    .into_owned(),
            );
            if ctx == 0 {
                break;
            }
        }
    }
    parts.join(": ")
}

/// Copies a buffer the library allocated and releases it.
///
/// # Safety
/// `buf` must have been filled by the library (or be empty).
unsafe fn take_buffer(api: &Api, buf: &mut GssBuffer) -> Vec<u8> {
    let out = if buf.value.is_null() || buf.length == 0 {
        Vec::new()
    } else {
        // SAFETY: the library says `value` holds `length` bytes.
        unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) }.to_vec()
    };
    let mut min = 0;
    // SAFETY: releasing a library-owned buffer once.
    unsafe { (api.release_buffer)(&mut min, buf) };
    out
}

fn check(api: &Api, call: &'static str, major: OmUint32, minor: OmUint32) -> Result<(), GssError> {
    if major & GSS_ROUTINE_ERROR_MASK == 0 {
        return Ok(());
    }
    let detail = status_text(api, major, minor);
    match major & GSS_ROUTINE_ERROR_MASK {
        GSS_S_NO_CRED | GSS_S_CREDENTIALS_EXPIRED => Err(GssError::NoCredentials(detail)),
        _ => Err(GssError::Failed { call, detail }),
    }
}

/// A Kerberos security context being set up or set up, with the server
/// `service@host`. Not safe for two threads at once (MIT's per-context
/// sequence state): callers hold it behind a lock.
pub struct SecContext {
    api: &'static Api,
    ctx: GssCtx,
    target: GssName,
    complete: bool,
    /// How long the context is valid, as the library said when it was
    /// complete (the ticket's remaining life); `None`: indefinite, or not
    /// complete yet.
    lifetime: Option<std::time::Duration>,
}

// SAFETY: the handles are only used through &mut self or under a lock the
// owner holds; MIT's GSS-API allows a context to move between threads.
unsafe impl Send for SecContext {}

impl fmt::Debug for SecContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecContext")
            .field("complete", &self.complete)
            .finish_non_exhaustive()
    }
}

impl SecContext {
    /// A context to be set up with `service@host` (a host-based service
    /// name, e.g. `nfs@filer.example`).
    pub fn new(service_at_host: &str) -> Result<Self, GssError> {
        let api = api()?;
        let mut min = 0;
        let mut name_buf = GssBuffer::input(service_at_host.as_bytes());
        let mut oid = GssOid {
            length: NT_HOSTBASED_SERVICE.len() as OmUint32,
            elements: NT_HOSTBASED_SERVICE.as_ptr() as *mut c_void,
        };
        let mut target: GssName = ptr::null_mut();
        // SAFETY: the buffer and OID borrow live data; `target` is an
        // out-pointer released in Drop.
        let maj = unsafe { (api.import_name)(&mut min, &mut name_buf, &mut oid, &mut target) };
        check(api, "gss_import_name", maj, min)?;
        Ok(Self {
            api,
            ctx: ptr::null_mut(),
            target,
            complete: false,
            lifetime: None,
        })
    }

    /// One step of GSS_Init_sec_context: `token` is the server's last
    /// token (`None` at first). Returns the token to send (possibly empty)
    /// and whether the context is complete.
    pub fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        let api = self.api;
        let mut min = 0;
        let mut mech = GssOid {
            length: MECH_KRB5.len() as OmUint32,
            elements: MECH_KRB5.as_ptr() as *mut c_void,
        };
        let mut input = token.map(GssBuffer::input);
        let input_ptr = input
            .as_mut()
            .map_or(ptr::null_mut(), |b| b as *mut GssBuffer);
        let mut output = GssBuffer::empty();
        let mut ret_flags = 0;
        let mut time_rec: OmUint32 = 0;
        // SAFETY: every pointer is valid for the call; the context handle
        // is ours (null at first, then the library's); `output` is taken
        // and released below.
        let maj = unsafe {
            (api.init_sec_context)(
                &mut min,
                ptr::null_mut(),
                &mut self.ctx,
                self.target,
                &mut mech,
                GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG,
                0,
                ptr::null_mut(),
                input_ptr,
                ptr::null_mut(),
                &mut output,
                &mut ret_flags,
                &mut time_rec,
            )
        };
        // SAFETY: filled by the library (or left empty).
        let out = unsafe { take_buffer(api, &mut output) };
        check(api, "gss_init_sec_context", maj, min)?;
        // Supplementary bits (RFC 2744 §3.9.1) aside, COMPLETE or
        // CONTINUE_NEEDED is left once `check` passed.
        self.complete = maj & GSS_S_CONTINUE_NEEDED == 0;
        if self.complete {
            // GSS_C_INDEFINITE (all ones): no end.
            self.lifetime = (time_rec != OmUint32::MAX)
                .then(|| std::time::Duration::from_secs(u64::from(time_rec)));
        }
        Ok((out, self.complete))
    }

    /// How long the complete context is valid from when it was made (the
    /// Kerberos ticket's remaining life then); `None` when the library
    /// gave no end.
    pub fn lifetime(&self) -> Option<std::time::Duration> {
        self.lifetime
    }

    /// GSS_GetMIC of `msg` (default quality of protection).
    pub fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        let api = self.api;
        let mut min = 0;
        let mut input = GssBuffer::input(msg);
        let mut token = GssBuffer::empty();
        // SAFETY: valid pointers; `token` is taken and released below.
        let maj = unsafe { (api.get_mic)(&mut min, self.ctx, 0, &mut input, &mut token) };
        // SAFETY: filled by the library (or left empty).
        let out = unsafe { take_buffer(api, &mut token) };
        check(api, "gss_get_mic", maj, min)?;
        Ok(out)
    }

    /// GSS_VerifyMIC: true when `mic` is this context's checksum of `msg`.
    pub fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        let api = self.api;
        let mut min = 0;
        let mut input = GssBuffer::input(msg);
        let mut token = GssBuffer::input(mic);
        let mut qop = 0;
        // SAFETY: valid pointers to borrowed input.
        let maj = unsafe { (api.verify_mic)(&mut min, self.ctx, &mut input, &mut token, &mut qop) };
        check(api, "gss_verify_mic", maj, min)
    }

    /// GSS_Wrap with confidentiality (privacy): the token carrying `msg`
    /// encrypted and checksummed.
    pub fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        let api = self.api;
        let mut min = 0;
        let mut input = GssBuffer::input(msg);
        let mut output = GssBuffer::empty();
        let mut conf = 0;
        // SAFETY: valid pointers; `output` is taken and released below.
        let maj =
            unsafe { (api.wrap)(&mut min, self.ctx, 1, 0, &mut input, &mut conf, &mut output) };
        // SAFETY: filled by the library (or left empty).
        let out = unsafe { take_buffer(api, &mut output) };
        check(api, "gss_wrap", maj, min)?;
        if conf == 0 {
            return Err(GssError::Failed {
                call: "gss_wrap",
                detail: "the context gave no confidentiality".into(),
            });
        }
        Ok(out)
    }

    /// GSS_Unwrap: the message inside `token`, after checking its checksum.
    /// A token that was not encrypted is refused (privacy was asked for).
    pub fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
        let api = self.api;
        let mut min = 0;
        let mut input = GssBuffer::input(token);
        let mut output = GssBuffer::empty();
        let mut conf = 0;
        let mut qop = 0;
        // SAFETY: valid pointers; `output` is taken and released below.
        let maj = unsafe {
            (api.unwrap)(
                &mut min,
                self.ctx,
                &mut input,
                &mut output,
                &mut conf,
                &mut qop,
            )
        };
        // SAFETY: filled by the library (or left empty).
        let out = unsafe { take_buffer(api, &mut output) };
        check(api, "gss_unwrap", maj, min)?;
        if conf == 0 {
            return Err(GssError::Failed {
                call: "gss_unwrap",
                detail: "the reply was not encrypted".into(),
            });
        }
        Ok(out)
    }
}

impl Drop for SecContext {
    fn drop(&mut self) {
        let mut min = 0;
        // SAFETY: the handles are ours and released once; null ones are
        // skipped.
        unsafe {
            if !self.ctx.is_null() {
                (self.api.delete_sec_context)(&mut min, &mut self.ctx, ptr::null_mut());
            }
            if !self.target.is_null() {
                (self.api.release_name)(&mut min, &mut self.target);
            }
        }
    }
}
