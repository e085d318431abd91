//! ONC RPC version 2 (RFC 5531): call and reply messages, authentication
//! flavors (AUTH_SYS; RPCSEC_GSS in [`gss`]), TCP record marking, and
//! the AUTH_TLS probe of RPC-with-TLS ([`tls`]).

pub mod auth;
pub mod gss;
pub mod msg;
pub mod record;
pub mod tls;

pub use auth::{AuthSys, OpaqueAuth};
pub use msg::{
    encode_call_header, peek_msg_type, AcceptStat, AcceptedReply, AuthStat, CallHeader, MsgType,
    RejectedReply, ReplyBody, ReplyHeader, RPC_VERSION,
};
pub use record::{RecordError, RecordReader, RecordWriter, MAX_FRAGMENT_LEN};
