//! MOUNT version 3 (RFC 1813 appendix I): MNT, UMNT, EXPORT.
