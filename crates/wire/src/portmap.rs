//! PORTMAP version 2 (RFC 1833 §3): GETPORT.
