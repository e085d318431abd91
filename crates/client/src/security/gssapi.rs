//! The system's MIT GSS-API library (`libgssapi_krb5.so.2`), loaded at the
//! first Kerberos mount: a client that never asks for Kerberos neither
//! links nor loads it. Only the calls RPCSEC_GSS needs (RFC 2744 names):
//! name import, context initiation (bound to a TLS session with channel
//! bindings when the connection is in TLS), MIC make/check, wrap/unwrap.
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

use super::cfx::{CfxContext, CfxKeys};
use super::library_fn;

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

/// MIT's `gss_channel_bindings_struct` (RFC 2744 §3.11): addresses
/// unspecified, the application data the binding.
#[repr(C)]
struct GssChannelBindings {
    initiator_addrtype: OmUint32,
    initiator_address: GssBuffer,
    acceptor_addrtype: OmUint32,
    acceptor_address: GssBuffer,
    application_data: GssBuffer,
}

/// GSS_C_AF_UNSPEC: no address in the bindings.
const GSS_C_AF_UNSPEC: OmUint32 = 0;

impl GssChannelBindings {
    /// Bindings carrying `data` (borrowed: it must outlive the call).
    fn of(data: &[u8]) -> Self {
        Self {
            initiator_addrtype: GSS_C_AF_UNSPEC,
            initiator_address: GssBuffer::empty(),
            acceptor_addrtype: GSS_C_AF_UNSPEC,
            acceptor_address: GssBuffer::empty(),
            application_data: GssBuffer::input(data),
        }
    }
}

/// The GSS-API channel bindings' application data for a TLS session whose
/// `tls-exporter` value (RFC 9266) is `exporter`: the channel binding
/// type's prefix `tls-exporter:` then the value (RFC 5056 §2.1).
pub fn tls_exporter_binding(exporter: &[u8]) -> Vec<u8> {
    let mut data = b"tls-exporter:".to_vec();
    data.extend_from_slice(exporter);
    data
}

const GSS_S_COMPLETE: OmUint32 = 0;
const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;
/// The routine-error field of a major status (RFC 2744 §3.9.1).
const GSS_ROUTINE_ERROR_MASK: OmUint32 = 0xff << 16;
const GSS_S_NO_CRED: OmUint32 = 7 << 16;
const GSS_S_CREDENTIALS_EXPIRED: OmUint32 = 11 << 16;
/// The peers' channel bindings differ (RFC 2744 §3.9.1).
pub const GSS_S_BAD_BINDINGS: OmUint32 = 4 << 16;
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
/// A set of buffers (MIT's `gss_buffer_set_desc`).
#[repr(C)]
struct GssBufferSet {
    count: usize,
    elements: *mut GssBuffer,
}
type InquireSecContextByOid =
    unsafe extern "C" fn(*mut OmUint32, GssCtx, *mut GssOid, *mut *mut GssBufferSet) -> OmUint32;
type ReleaseBufferSet = unsafe extern "C" fn(*mut OmUint32, *mut *mut GssBufferSet) -> OmUint32;
type FreeLucidSecContext = unsafe extern "C" fn(*mut OmUint32, *mut c_void) -> OmUint32;

/// MIT's `gss_krb5_lucid_key_t` (gssapi_krb5.h).
#[repr(C)]
struct LucidKey {
    enctype: OmUint32,
    length: OmUint32,
    data: *mut c_void,
}

/// MIT's `gss_krb5_rfc1964_keydata_t`.
#[repr(C)]
struct LucidRfc1964 {
    sign_alg: OmUint32,
    seal_alg: OmUint32,
    ctx_key: LucidKey,
}

/// MIT's `gss_krb5_cfx_keydata_t`.
#[repr(C)]
struct LucidCfx {
    have_acceptor_subkey: OmUint32,
    ctx_key: LucidKey,
    acceptor_subkey: LucidKey,
}

/// MIT's `gss_krb5_lucid_context_v1_t`: what an established context
/// exports for a kernel (or us) to make its tokens.
#[repr(C)]
struct LucidV1 {
    version: OmUint32,
    initiate: OmUint32,
    endtime: OmUint32,
    send_seq: u64,
    recv_seq: u64,
    /// 0: RFC 1964 tokens; 1: RFC 4121 (CFX).
    protocol: OmUint32,
    rfc1964: LucidRfc1964,
    cfx: LucidCfx,
}

/// GSS_KRB5_EXPORT_LUCID_SEC_CONTEXT_OID 1.2.840.113554.1.2.2.5.6 with the
/// version (1) appended, as `gss_krb5_export_lucid_sec_context` composes
/// it. Asked through `gss_inquire_sec_context_by_oid` directly: that
/// wrapper also deletes the context, which must stay for the enctypes left
/// to MIT.
const LUCID_V1_OID: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x05\x06\x01";

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
    /// The lucid export (absent from a library without it: MIT's path).
    lucid: Option<LucidApi>,
    // Keeps the library mapped while the pointers above are in use (for
    // the life of the process: it is never dropped).
    _lib: Library,
}

/// The calls that export an established context's keys.
struct LucidApi {
    inquire_by_oid: InquireSecContextByOid,
    release_buffer_set: ReleaseBufferSet,
    free_lucid: FreeLucidSecContext,
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
            import_name: library_fn(&lib, LIBRARY, b"gss_import_name\0")?,
            release_name: library_fn(&lib, LIBRARY, b"gss_release_name\0")?,
            init_sec_context: library_fn(&lib, LIBRARY, b"gss_init_sec_context\0")?,
            get_mic: library_fn(&lib, LIBRARY, b"gss_get_mic\0")?,
            verify_mic: library_fn(&lib, LIBRARY, b"gss_verify_mic\0")?,
            wrap: library_fn(&lib, LIBRARY, b"gss_wrap\0")?,
            unwrap: library_fn(&lib, LIBRARY, b"gss_unwrap\0")?,
            release_buffer: library_fn(&lib, LIBRARY, b"gss_release_buffer\0")?,
            delete_sec_context: library_fn(&lib, LIBRARY, b"gss_delete_sec_context\0")?,
            display_status: library_fn(&lib, LIBRARY, b"gss_display_status\0")?,
            lucid: (|| -> Result<LucidApi, String> {
                Ok(LucidApi {
                    inquire_by_oid: library_fn(&lib, LIBRARY, b"gss_inquire_sec_context_by_oid\0")?,
                    release_buffer_set: library_fn(&lib, LIBRARY, b"gss_release_buffer_set\0")?,
                    free_lucid: library_fn(&lib, LIBRARY, b"gss_krb5_free_lucid_sec_context\0")?,
                })
            })()
            .ok(),
            _lib: lib,
        })
    }
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
    /// The context's tokens made in-process (RFC 4121 with an AES enctype),
    /// once complete; `None`: MIT's library makes them.
    cfx: Option<CfxContext>,
    /// The channel bindings' application data given to each
    /// GSS_Init_sec_context step (a TLS session's, [`tls_exporter_binding`]);
    /// `None`: no bindings (GSS_C_NO_CHANNEL_BINDINGS).
    bindings: Option<Vec<u8>>,
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
            cfx: None,
            bindings: None,
        })
    }

    /// Binds the context to a channel (RFC 5056): `application_data` goes
    /// into the GSS-API channel bindings of every step, and an acceptor
    /// given other bindings refuses the context (GSS_S_BAD_BINDINGS). MIT's
    /// acceptor given none ignores them. Before the first [`step`](Self::step).
    pub fn bind_channel(&mut self, application_data: Vec<u8>) {
        self.bindings = Some(application_data);
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
        let mut bindings = self.bindings.as_deref().map(GssChannelBindings::of);
        let bindings_ptr = bindings.as_mut().map_or(ptr::null_mut(), |b| {
            b as *mut GssChannelBindings as *mut c_void
        });
        // SAFETY: every pointer is valid for the call (the bindings borrow
        // `self.bindings`, unchanged during it); the context handle is ours
        // (null at first, then the library's); `output` is taken and
        // released below.
        let maj = unsafe {
            (api.init_sec_context)(
                &mut min,
                ptr::null_mut(),
                &mut self.ctx,
                self.target,
                &mut mech,
                GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG,
                0,
                bindings_ptr,
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
            self.cfx = in_process_tokens(api, self.ctx);
        }
        Ok((out, self.complete))
    }

    /// How long the complete context is valid from when it was made (the
    /// Kerberos ticket's remaining life then); `None` when the library
    /// gave no end.
    pub fn lifetime(&self) -> Option<std::time::Duration> {
        self.lifetime
    }

    /// The enctype whose tokens this context makes in-process (RFC 4121,
    /// `cfx.rs`); `None`: MIT's library makes them (an enctype other than
    /// 17 to 20, RFC 1964 tokens, or a library without the lucid export).
    pub fn in_process_enctype(&self) -> Option<u32> {
        self.cfx.as_ref().map(|c| c.enctype().id())
    }

    /// Appends to `out` the Wrap token (with confidentiality) of the
    /// concatenation of `parts`: no copy of the data but into `out` when
    /// the tokens are made in-process.
    pub fn wrap_into(&mut self, parts: &[&[u8]], out: &mut Vec<u8>) -> Result<(), GssError> {
        if let Some(cfx) = &self.cfx {
            cfx.wrap(parts, true, out);
            return Ok(());
        }
        let msg = parts.concat();
        out.extend_from_slice(&self.wrap(&msg)?);
        Ok(())
    }

    /// GSS_Unwrap of `token` into `out` (appended): the range of `out` that
    /// holds the message. In-process, an encrypted token is decrypted
    /// straight into `out`, its confounder first (the message starts 16
    /// bytes after where `out` ended). A token that was not encrypted is
    /// refused. On an error `out` is as it was.
    pub fn unwrap_append(
        &mut self,
        token: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<std::ops::Range<usize>, GssError> {
        if let Some(cfx) = &self.cfx {
            let at = out.len();
            let (range, conf) = cfx
                .unwrap_append(token, out)
                .map_err(|e| token_failed("gss_unwrap", e))?;
            if !conf {
                out.truncate(at);
                return Err(GssError::Failed {
                    call: "gss_unwrap",
                    detail: "the reply was not encrypted".into(),
                });
            }
            return Ok(range);
        }
        let plain = self.unwrap(token)?;
        let at = out.len();
        out.extend_from_slice(&plain);
        Ok(at..out.len())
    }

    /// GSS_Unwrap of `token` in place: the range of `token` that holds
    /// the message. A token that was not encrypted is refused.
    pub fn unwrap_in_place(
        &mut self,
        token: &mut [u8],
    ) -> Result<std::ops::Range<usize>, GssError> {
        if let Some(cfx) = &self.cfx {
            let (range, conf) = cfx
                .unwrap_in_place(token)
                .map_err(|e| token_failed("gss_unwrap", e))?;
            if !conf {
                return Err(GssError::Failed {
                    call: "gss_unwrap",
                    detail: "the reply was not encrypted".into(),
                });
            }
            return Ok(range);
        }
        let plain = self.unwrap(token)?;
        token[..plain.len()].copy_from_slice(&plain);
        Ok(0..plain.len())
    }

    /// GSS_GetMIC of the concatenation of `parts` (copied together only
    /// for MIT's library).
    pub fn get_mic_of(&mut self, parts: &[&[u8]]) -> Result<Vec<u8>, GssError> {
        if let Some(cfx) = &self.cfx {
            let mut out = Vec::with_capacity(40);
            cfx.get_mic(parts, &mut out);
            return Ok(out);
        }
        self.get_mic(&parts.concat())
    }

    /// GSS_GetMIC of `msg` (default quality of protection).
    pub fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        if let Some(cfx) = &self.cfx {
            let mut out = Vec::with_capacity(40);
            cfx.get_mic(&[msg], &mut out);
            return Ok(out);
        }
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
        if let Some(cfx) = &self.cfx {
            return cfx
                .verify_mic(msg, mic)
                .map_err(|e| token_failed("gss_verify_mic", e));
        }
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
        if let Some(cfx) = &self.cfx {
            let mut out = Vec::new();
            cfx.wrap(&[msg], true, &mut out);
            return Ok(out);
        }
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
        if let Some(cfx) = &self.cfx {
            let mut buf = token.to_vec();
            let (range, conf) = cfx
                .unwrap_in_place(&mut buf)
                .map_err(|e| token_failed("gss_unwrap", e))?;
            if !conf {
                return Err(GssError::Failed {
                    call: "gss_unwrap",
                    detail: "the reply was not encrypted".into(),
                });
            }
            buf.truncate(range.end);
            buf.drain(..range.start);
            return Ok(buf);
        }
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

fn token_failed(call: &'static str, e: super::cfx::CfxError) -> GssError {
    GssError::Failed {
        call,
        detail: e.to_string(),
    }
}

/// The established context `ctx`'s tokens made in-process, when MIT
/// exports its keys (the lucid context, version 1) and they are RFC 4121
/// ones of an AES enctype; `None` leaves them to the library (said at
/// debug level).
fn in_process_tokens(api: &Api, ctx: GssCtx) -> Option<CfxContext> {
    let lucid = api.lucid.as_ref()?;
    let mut min = 0;
    let mut oid = GssOid {
        length: LUCID_V1_OID.len() as OmUint32,
        elements: LUCID_V1_OID.as_ptr() as *mut c_void,
    };
    let mut set: *mut GssBufferSet = ptr::null_mut();
    // SAFETY: the context is the library's, complete; `set` is an
    // out-pointer released below.
    let maj = unsafe { (lucid.inquire_by_oid)(&mut min, ctx, &mut oid, &mut set) };
    let mut kctx: *mut c_void = ptr::null_mut();
    if maj & GSS_ROUTINE_ERROR_MASK == 0 && !set.is_null() {
        // SAFETY: the library filled `set`: `count` buffers at `elements`;
        // the lucid export is one buffer holding the lucid context's
        // address (MIT's gss_krb5_export_lucid_sec_context reads it so).
        unsafe {
            let s = &*set;
            if s.count == 1 && !s.elements.is_null() {
                let b = &*s.elements;
                if b.length == std::mem::size_of::<*mut c_void>() && !b.value.is_null() {
                    kctx = ptr::read_unaligned(b.value as *const *mut c_void);
                }
            }
        }
    }
    if !set.is_null() {
        // SAFETY: released once; the lucid context itself is not in it.
        unsafe { (lucid.release_buffer_set)(&mut min, &mut set) };
    }
    if kctx.is_null() {
        tracing::debug!(
            "the GSS-API library exported no lucid context (major {maj:#x}): its own tokens"
        );
        return None;
    }
    // SAFETY: version 1 of the lucid context was asked for, whose layout
    // `LucidV1` mirrors; it stays valid until freed just below.
    let made = unsafe { cfx_of(&*(kctx as *const LucidV1)) };
    // SAFETY: freed once, as the library allocated it.
    unsafe { (lucid.free_lucid)(&mut min, kctx) };
    match made {
        Ok(cfx) => {
            tracing::debug!(
                enctype = cfx.enctype().id(),
                "Kerberos tokens made in-process"
            );
            Some(cfx)
        }
        Err(why) => {
            tracing::debug!("Kerberos tokens left to the GSS-API library: {why}");
            None
        }
    }
}

/// The tokens of a lucid context, or why they stay with the library.
///
/// # Safety
/// The keys' `data` must point at `length` readable bytes (or be null).
unsafe fn cfx_of(l: &LucidV1) -> Result<CfxContext, String> {
    if l.version != 1 {
        return Err(format!("lucid context version {}", l.version));
    }
    if l.protocol != 1 {
        return Err(format!(
            "RFC 1964 tokens (enctype {})",
            l.rfc1964.ctx_key.enctype
        ));
    }
    /// # Safety
    /// As for `cfx_of`.
    unsafe fn bytes(k: &LucidKey) -> (u32, &[u8]) {
        let data = if k.data.is_null() {
            &[][..]
        } else {
            // SAFETY: the caller's promise.
            unsafe { std::slice::from_raw_parts(k.data as *const u8, k.length as usize) }
        };
        (k.enctype, data)
    }
    // SAFETY: the caller's promise, for both keys.
    let (ctx_key, acceptor_subkey) = unsafe {
        (
            bytes(&l.cfx.ctx_key),
            (l.cfx.have_acceptor_subkey != 0).then(|| bytes(&l.cfx.acceptor_subkey)),
        )
    };
    CfxContext::new(&CfxKeys {
        initiator: l.initiate != 0,
        send_seq: l.send_seq,
        ctx_key,
        acceptor_subkey,
    })
    .map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    //! Our RFC 4121 tokens against MIT's own, both ways: a context set up
    //! between this process's initiator and an MIT acceptor holding the
    //! test realm's service keytab (`scripts/server/kdc.sh`, beside its
    //! `KRB5_CONFIG`).
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    type AcceptSecContext = unsafe extern "C" fn(
        *mut OmUint32,
        *mut GssCtx,
        *mut c_void,
        *mut GssBuffer,
        *mut c_void,
        *mut GssName,
        *mut *mut GssOid,
        *mut GssBuffer,
        *mut OmUint32,
        *mut OmUint32,
        *mut *mut c_void,
    ) -> OmUint32;
    type RegisterAcceptorIdentity = unsafe extern "C" fn(*const std::ffi::c_char) -> OmUint32;

    /// MIT's side of the context: the acceptor, all its tokens MIT's.
    struct MitAcceptor {
        api: &'static Api,
        accept: AcceptSecContext,
        ctx: GssCtx,
        /// The channel bindings' application data the acceptor is given
        /// (`None`: GSS_C_NO_CHANNEL_BINDINGS, as NFS-Ganesha passes).
        bindings: Option<Vec<u8>>,
    }

    /// GSS_C_CHANNEL_BOUND_FLAG (MIT 1.19 and later): the acceptor's
    /// bindings and the initiator's were both given and agree.
    const GSS_C_CHANNEL_BOUND_FLAG: OmUint32 = 2048;

    impl MitAcceptor {
        fn new(keytab: &std::path::Path) -> Self {
            let api = api().expect("library");
            let lib = unsafe { Library::new(LIBRARY) }.expect("library");
            // SAFETY: MIT's signatures (gssapi.h, gssapi_krb5.h).
            let (accept, register) = unsafe {
                let a: AcceptSecContext =
                    library_fn(&lib, LIBRARY, b"gss_accept_sec_context\0").unwrap();
                let r: RegisterAcceptorIdentity =
                    library_fn(&lib, LIBRARY, b"krb5_gss_register_acceptor_identity\0").unwrap();
                (a, r)
            };
            std::mem::forget(lib);
            let path = std::ffi::CString::new(keytab.to_str().unwrap()).unwrap();
            // SAFETY: a NUL-terminated path the library copies.
            assert_eq!(unsafe { register(path.as_ptr()) }, GSS_S_COMPLETE);
            Self {
                api,
                accept,
                ctx: ptr::null_mut(),
                bindings: None,
            }
        }

        fn step(&mut self, token: &[u8]) -> Vec<u8> {
            let (out, _flags) = self.try_step(token).expect("accepts");
            out
        }

        /// One GSS_Accept_sec_context step: the token to send back and the
        /// context's flags, or the major status of a refusal.
        fn try_step(&mut self, token: &[u8]) -> Result<(Vec<u8>, OmUint32), OmUint32> {
            let (mut min, mut flags, mut time) = (0, 0, 0);
            let mut input = GssBuffer::input(token);
            let mut output = GssBuffer::empty();
            let mut bindings = self.bindings.as_deref().map(GssChannelBindings::of);
            let bindings_ptr = bindings.as_mut().map_or(ptr::null_mut(), |b| {
                b as *mut GssChannelBindings as *mut c_void
            });
            // SAFETY: valid pointers; the output is taken below.
            let maj = unsafe {
                (self.accept)(
                    &mut min,
                    &mut self.ctx,
                    ptr::null_mut(),
                    &mut input,
                    bindings_ptr,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    &mut output,
                    &mut flags,
                    &mut time,
                    ptr::null_mut(),
                )
            };
            let out = unsafe { take_buffer(self.api, &mut output) };
            if maj & GSS_ROUTINE_ERROR_MASK != 0 {
                eprintln!(
                    "gss_accept_sec_context: {}",
                    status_text(self.api, maj, min)
                );
                return Err(maj);
            }
            Ok((out, flags))
        }

        fn get_mic(&self, msg: &[u8]) -> Vec<u8> {
            let mut min = 0;
            let mut input = GssBuffer::input(msg);
            let mut token = GssBuffer::empty();
            let maj = unsafe { (self.api.get_mic)(&mut min, self.ctx, 0, &mut input, &mut token) };
            let out = unsafe { take_buffer(self.api, &mut token) };
            check(self.api, "gss_get_mic", maj, min).expect("MIT MIC");
            out
        }

        fn verify_mic(&self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
            let (mut min, mut qop) = (0, 0);
            let mut input = GssBuffer::input(msg);
            let mut token = GssBuffer::input(mic);
            let maj = unsafe {
                (self.api.verify_mic)(&mut min, self.ctx, &mut input, &mut token, &mut qop)
            };
            check(self.api, "gss_verify_mic", maj, min)
        }

        fn wrap(&self, msg: &[u8], conf: bool) -> Vec<u8> {
            let (mut min, mut conf_state) = (0, 0);
            let mut input = GssBuffer::input(msg);
            let mut output = GssBuffer::empty();
            let maj = unsafe {
                (self.api.wrap)(
                    &mut min,
                    self.ctx,
                    c_int::from(conf),
                    0,
                    &mut input,
                    &mut conf_state,
                    &mut output,
                )
            };
            let out = unsafe { take_buffer(self.api, &mut output) };
            check(self.api, "gss_wrap", maj, min).expect("MIT wrap");
            assert_eq!(conf_state != 0, conf);
            out
        }

        fn unwrap(&self, token: &[u8]) -> Result<(Vec<u8>, bool), GssError> {
            let (mut min, mut conf, mut qop) = (0, 0, 0);
            let mut input = GssBuffer::input(token);
            let mut output = GssBuffer::empty();
            let maj = unsafe {
                (self.api.unwrap)(
                    &mut min,
                    self.ctx,
                    &mut input,
                    &mut output,
                    &mut conf,
                    &mut qop,
                )
            };
            let out = unsafe { take_buffer(self.api, &mut output) };
            check(self.api, "gss_unwrap", maj, min)?;
            Ok((out, conf != 0))
        }
    }

    #[test]
    fn in_process_tokens_interoperate_with_mit_both_ways() {
        let test = "in_process_tokens_interoperate_with_mit_both_ways";
        let Some(url) = directnfs_testkit::server::url_krb5(test) else {
            return;
        };
        let host = url
            .strip_prefix("nfs://")
            .and_then(|r| r.split('/').next())
            .expect("URL host");
        let conf = std::env::var("KRB5_CONFIG").expect("KRB5_CONFIG beside DNFS_TEST_URL_KRB5");
        let keytab = std::path::Path::new(&conf).with_file_name("server.keytab");
        let mut acceptor = MitAcceptor::new(&keytab);
        let mut init = SecContext::new(&format!("nfs@{host}")).expect("name");
        let mut reply: Option<Vec<u8>> = None;
        for _ in 0..4 {
            let (token, done) = init.step(reply.as_deref()).expect("initiator step");
            if !token.is_empty() {
                reply = Some(acceptor.step(&token));
            }
            if done {
                break;
            }
        }
        assert!(init.complete, "the context did not complete");
        let enctype = init
            .in_process_enctype()
            .expect("an AES context's tokens are made in-process");
        assert!((17..=20).contains(&enctype), "enctype {enctype}");
        let msg: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();

        // Ours, checked by MIT.
        let mic = init.get_mic(&msg).expect("our MIC");
        acceptor
            .verify_mic(&msg, &mic)
            .expect("MIT verifies our MIC");
        assert!(acceptor.verify_mic(&msg[1..], &mic).is_err());
        for conf in [true, false] {
            let mut token = Vec::new();
            init.cfx
                .as_ref()
                .unwrap()
                .wrap(&[&msg[..100], &msg[100..]], conf, &mut token);
            let (plain, sealed) = acceptor.unwrap(&token).expect("MIT unwraps ours");
            assert_eq!((plain, sealed), (msg.clone(), conf));
        }
        let sealed = init.wrap(&msg).expect("our wrap");
        assert!(!sealed.windows(64).any(|w| w == &msg[..64]), "encrypted");
        let mut altered = sealed.clone();
        altered[40] ^= 1;
        assert!(
            acceptor.unwrap(&altered).is_err(),
            "MIT refuses an altered token"
        );

        // MIT's, checked by ours.
        let mic = acceptor.get_mic(&msg);
        init.verify_mic(&msg, &mic).expect("we verify MIT's MIC");
        assert!(init.verify_mic(b"other", &mic).is_err());
        for conf in [true, false] {
            let mut token = acceptor.wrap(&msg, conf);
            let (range, sealed) = init
                .cfx
                .as_ref()
                .unwrap()
                .unwrap_in_place(&mut token)
                .expect("we unwrap MIT's");
            assert_eq!((&token[range], sealed), (&msg[..], conf));
        }
        let token = acceptor.wrap(&msg, true);
        assert_eq!(init.unwrap(&token).expect("unwrap"), msg);
        for at in [0, 2, 17, token.len() / 2, token.len() - 1] {
            let mut bad = token.clone();
            bad[at] ^= 0x10;
            assert!(init.unwrap(&bad).is_err(), "MIT's token altered at {at}");
        }
        assert!(
            init.unwrap(&acceptor.wrap(&msg, false)).is_err(),
            "not encrypted"
        );

        // MIT's initiator context outlives the lucid export (the path kept
        // for other enctypes uses it).
        let mut min = 0;
        let mut input = GssBuffer::input(&msg);
        let mut token = GssBuffer::empty();
        let maj = unsafe { (init.api.get_mic)(&mut min, init.ctx, 0, &mut input, &mut token) };
        let mit_mic = unsafe { take_buffer(init.api, &mut token) };
        check(init.api, "gss_get_mic", maj, min).expect("MIT's initiator context still works");
        acceptor
            .verify_mic(&msg, &mit_mic)
            .expect("and its MIC checks");
        eprintln!("in-process Kerberos tokens checked against MIT with enctype {enctype}");
    }

    /// The Kerberos test realm's service keytab and the server's host, or
    /// `None` (the test SKIPPED, or FAILED under DNFS_TEST_REQUIRE_KRB5)
    /// without the realm.
    fn realm(test: &str) -> Option<(std::path::PathBuf, String)> {
        let url = directnfs_testkit::server::url_krb5(test)?;
        let host = url
            .strip_prefix("nfs://")
            .and_then(|r| r.split('/').next())
            .expect("URL host")
            .to_owned();
        let conf = std::env::var("KRB5_CONFIG").expect("KRB5_CONFIG beside DNFS_TEST_URL_KRB5");
        let keytab = std::path::Path::new(&conf).with_file_name("server.keytab");
        Some((keytab, host))
    }

    /// Sets up a context between this crate's initiator, given
    /// `initiator` as its channel bindings' data (as a connection in TLS
    /// does: `exchange.rs`), and an MIT acceptor given `acceptor`: the
    /// acceptor's flags once complete, or the major status it refused with.
    fn bound_context(
        keytab: &std::path::Path,
        host: &str,
        initiator: Option<Vec<u8>>,
        acceptor: Option<Vec<u8>>,
    ) -> Result<OmUint32, OmUint32> {
        let mut mit = MitAcceptor::new(keytab);
        mit.bindings = acceptor;
        let mut init = SecContext::new(&format!("nfs@{host}")).expect("name");
        if let Some(data) = initiator {
            init.bind_channel(data);
        }
        let mut reply: Option<Vec<u8>> = None;
        let mut flags = None;
        for _ in 0..4 {
            let (token, done) = init.step(reply.as_deref()).expect("initiator step");
            if !token.is_empty() {
                let (out, f) = mit.try_step(&token)?;
                flags = Some(f);
                reply = Some(out);
            }
            if done {
                break;
            }
        }
        assert!(init.complete, "the context did not complete");
        Ok(flags.expect("the acceptor answered"))
    }

    #[test]
    fn a_context_bound_to_one_tls_session_is_refused_by_an_acceptor_of_another() {
        let test = "a_context_bound_to_one_tls_session_is_refused_by_an_acceptor_of_another";
        let Some((keytab, host)) = realm(test) else {
            return;
        };
        use crate::io::tls::{exporter, sessions};
        // Two TLS sessions; the client's end of the first binds the
        // context, as `exchange.rs` does on a connection in TLS.
        let (client, server) = sessions::pair();
        let (_, other_server) = sessions::pair();
        let ours = tls_exporter_binding(&exporter(&client).unwrap());
        let same = tls_exporter_binding(&exporter(&server).unwrap());
        let other = tls_exporter_binding(&exporter(&other_server).unwrap());
        assert!(ours.starts_with(b"tls-exporter:") && ours.len() == 13 + 32);

        // The server's end of the same session: accepted, and bound.
        let flags = bound_context(&keytab, &host, Some(ours.clone()), Some(same))
            .expect("an acceptor of the same TLS session accepts");
        assert_ne!(
            flags & GSS_C_CHANNEL_BOUND_FLAG,
            0,
            "the acceptor says the context is channel-bound"
        );

        // Another session's value: refused, GSS_S_BAD_BINDINGS.
        let refused = bound_context(&keytab, &host, Some(ours.clone()), Some(other))
            .expect_err("an acceptor of another TLS session refuses");
        assert_eq!(
            refused & GSS_ROUTINE_ERROR_MASK,
            GSS_S_BAD_BINDINGS,
            "major {refused:#x}"
        );

        // An acceptor given no bindings (NFS-Ganesha's, behind a TLS
        // front that it cannot see) ignores ours: accepted, not bound.
        let flags = bound_context(&keytab, &host, Some(ours), None)
            .expect("an acceptor without bindings accepts a bound context");
        assert_eq!(flags & GSS_C_CHANNEL_BOUND_FLAG, 0);

        // And MIT's acceptor given bindings takes a context made without
        // any (since 1.19), not bound: a server that requires the binding
        // has to check the flag.
        let same_again = tls_exporter_binding(&exporter(&server).unwrap());
        let flags = bound_context(&keytab, &host, None, Some(same_again))
            .expect("MIT accepts an unbound context where bindings were given");
        assert_eq!(flags & GSS_C_CHANNEL_BOUND_FLAG, 0);
    }

    /// Reads one record-marked RPC message (all fragments, bounded).
    fn read_message(r: &mut impl std::io::Read) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let mut mark = [0u8; 4];
            r.read_exact(&mut mark).expect("record mark");
            let word = u32::from_be_bytes(mark);
            let len = (word & 0x7fff_ffff) as usize;
            assert!(out.len() + len < 1 << 20, "record too large");
            let at = out.len();
            out.resize(at + len, 0);
            r.read_exact(&mut out[at..]).expect("record");
            if word & 0x8000_0000 != 0 {
                return out;
            }
        }
    }

    /// Writes an accepted, successful reply to `xid`: verifier `(flavor,
    /// body)`, then `results`, record-marked.
    fn write_reply(w: &mut impl std::io::Write, xid: u32, verf: (u32, &[u8]), results: &[u8]) {
        let mut m = Vec::new();
        for word in [xid, 1, 0, verf.0, verf.1.len() as u32] {
            m.extend_from_slice(&word.to_be_bytes());
        }
        m.extend_from_slice(verf.1);
        m.resize(m.len().next_multiple_of(4), 0);
        m.extend_from_slice(&0u32.to_be_bytes());
        m.extend_from_slice(results);
        let mut rec = (0x8000_0000u32 | m.len() as u32).to_be_bytes().to_vec();
        rec.extend_from_slice(&m);
        w.write_all(&rec).expect("reply");
        w.flush().expect("flush");
    }

    /// The GSS token of an RPCSEC_GSS INIT call: after the header, the
    /// credential and the verifier, one opaque.
    fn init_token(call: &[u8]) -> Vec<u8> {
        let word = |at: usize| u32::from_be_bytes(call[at..at + 4].try_into().unwrap()) as usize;
        let mut at = 24; // xid, CALL, rpcvers, prog, vers, proc
        for _ in 0..2 {
            at += 8 + word(at + 4).next_multiple_of(4); // flavor, body
        }
        let len = word(at);
        call[at + 4..at + 4 + len].to_vec()
    }

    /// One connection of an RPC-with-TLS server that makes RPCSEC_GSS
    /// contexts with an MIT acceptor whose channel bindings are this TLS
    /// session's `tls-exporter` value, or `other` when given (a server on
    /// the far side of something that ended TLS). Returns the acceptor's
    /// flags or the major status it refused with.
    fn serve_one_bound_context(
        listener: std::net::TcpListener,
        keytab: std::path::PathBuf,
        other: Option<Vec<u8>>,
    ) -> Result<OmUint32, OmUint32> {
        use crate::io::tls::{exporter, sessions};
        let (mut tcp, _) = listener.accept().expect("accept");
        // The AUTH_TLS probe, answered STARTTLS (RFC 9289 §4.1).
        let probe = read_message(&mut tcp);
        let xid = u32::from_be_bytes(probe[..4].try_into().unwrap());
        write_reply(&mut tcp, xid, (0, b"STARTTLS"), &[]);
        let conn = rustls::ServerConnection::new(sessions::server_config()).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        // The client's NULL call inside TLS.
        let null = read_message(&mut tls);
        write_reply(
            &mut tls,
            u32::from_be_bytes(null[..4].try_into().unwrap()),
            (0, b""),
            &[],
        );
        let ours = tls_exporter_binding(&exporter(&tls.conn).unwrap());
        let mut mit = MitAcceptor::new(&keytab);
        mit.bindings = Some(other.unwrap_or(ours));
        let call = read_message(&mut tls);
        let xid = u32::from_be_bytes(call[..4].try_into().unwrap());
        let mut res = Vec::new();
        let answer = mit.try_step(&init_token(&call));
        let window = 32u32;
        match &answer {
            Ok((token, _)) => {
                let mic = mit.get_mic(&window.to_be_bytes());
                for w in [4u32, u32::from_be_bytes(*b"ctx1"), 0, 0, window] {
                    res.extend_from_slice(&w.to_be_bytes());
                }
                res.extend_from_slice(&(token.len() as u32).to_be_bytes());
                res.extend_from_slice(token);
                res.resize(res.len().next_multiple_of(4), 0);
                write_reply(&mut tls, xid, (6, &mic), &res);
            }
            Err(major) => {
                for w in [0u32, *major, 0, 0, 0] {
                    res.extend_from_slice(&w.to_be_bytes());
                }
                write_reply(&mut tls, xid, (0, b""), &res);
            }
        }
        answer.map(|(_, flags)| flags)
    }

    #[test]
    fn a_kerberos_context_made_in_tls_is_bound_to_that_tls_connection() {
        let test = "a_kerberos_context_made_in_tls_is_bound_to_that_tls_connection";
        let Some((keytab, host)) = realm(test) else {
            return;
        };
        use crate::io::socket::{connect_bound, BufferRequest, ConnectSpec};
        use crate::io::tls::{exporter, sessions, TlsRequest, TlsSpec};
        use crate::security::{Flavor, GssConnection};
        let dir = std::env::temp_dir().join(format!("dnfs-cb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, sessions::CA_PEM).unwrap();
        let req = TlsRequest {
            ca: Some(ca),
            name: Some("server.test".into()),
            starttls: true,
            ..TlsRequest::default()
        };
        let (_, other_server) = sessions::pair();
        let other = tls_exporter_binding(&exporter(&other_server).unwrap());
        for server_bindings in [None, Some(other)] {
            let refuse = server_bindings.is_some();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let spec = ConnectSpec {
                remote: listener.local_addr().unwrap(),
                local: None,
                timeout: std::time::Duration::from_secs(10),
                dontroute: false,
                resvport: false,
                buffers: BufferRequest::Auto,
                tls: Some(std::sync::Arc::new(
                    TlsSpec::new(&req, "127.0.0.1", 100_003, 3).unwrap(),
                )),
            };
            let kt = keytab.clone();
            let server =
                std::thread::spawn(move || serve_one_bound_context(listener, kt, server_bindings));
            // What the transport and MOUNT do on a connection in TLS.
            let (stream, tls_exporter) = connect_bound(&spec).expect("STARTTLS and handshake");
            let made = GssConnection::establish_bound(
                stream,
                &host,
                (100_003, 3),
                Flavor::Krb5,
                std::time::Duration::from_secs(10),
                tls_exporter.as_ref().map(|e| &e[..]),
            );
            let accepted = server.join().unwrap();
            if refuse {
                let e = made.expect_err("refused by a server of another TLS session");
                assert_eq!(
                    accepted.expect_err("the acceptor refused") & GSS_ROUTINE_ERROR_MASK,
                    GSS_S_BAD_BINDINGS
                );
                let text = e.to_string();
                assert!(
                    text.contains("GSS_S_BAD_BINDINGS") && text.contains("this TLS session"),
                    "{text}"
                );
            } else {
                made.expect("a server of this TLS connection accepts the context");
                let flags = accepted.expect("the acceptor accepted");
                assert_ne!(
                    flags & GSS_C_CHANNEL_BOUND_FLAG,
                    0,
                    "bound to the connection"
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
