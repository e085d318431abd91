//! NFS version 3 (RFC 1813).
