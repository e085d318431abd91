//! XDR primitives (RFC 4506): big-endian 4-byte units, opaque data padded to
//! a multiple of four.
//!
//! Decoding reads from a borrowed `&[u8]` through [`XdrReader`]; every
//! variable-length item takes an explicit maximum and is checked against it
//! and against the bytes actually present before anything is allocated.
//! Encoding appends to a `Vec<u8>`.

use std::fmt;

/// Why a byte string could not be decoded. Names the XDR type involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before `what` was complete.
    #[error("truncated {what}: need {need} more bytes, have {have}")]
    Truncated {
        /// The XDR item being decoded.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// A length on the wire exceeds the bound for `what`.
    #[error("{what} too long: {len} bytes, at most {max} allowed")]
    TooLong {
        /// The XDR item being decoded.
        what: &'static str,
        /// The length the peer claimed.
        len: u64,
        /// The bound.
        max: u64,
    },
    /// A union discriminant or enum this decoder cannot continue past.
    #[error("invalid {what} discriminant {value:#x}")]
    BadDiscriminant {
        /// The XDR union or enum.
        what: &'static str,
        /// The value on the wire.
        value: u32,
    },
    /// Bytes were left over after a complete message.
    #[error("{len} trailing bytes after {what}")]
    Trailing {
        /// The message decoded.
        what: &'static str,
        /// Bytes left over.
        len: usize,
    },
}

/// A value that can be written in XDR.
pub trait Encode {
    /// Appends the XDR encoding of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);
}

/// A value that can be read from XDR.
pub trait Decode: Sized {
    /// Reads one value, advancing the reader.
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError>;
}

/// Decodes a complete message: `T` followed by nothing.
pub fn decode_exact<T: Decode>(bytes: &[u8], what: &'static str) -> Result<T, DecodeError> {
    let mut r = XdrReader::new(bytes);
    let v = T::decode(&mut r)?;
    r.finish(what)?;
    Ok(v)
}

/// Encodes a value into a fresh vector (convenient in tests and cold paths).
pub fn to_bytes<T: Encode + ?Sized>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out);
    out
}

/// Number of zero bytes that pad `len` bytes of opaque data to a 4-byte unit.
#[inline]
pub const fn pad_len(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// A cursor over XDR bytes.
#[derive(Clone)]
pub struct XdrReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl fmt::Debug for XdrReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XdrReader")
            .field("pos", &self.pos)
            .field("len", &self.buf.len())
            .finish()
    }
}

impl<'a> XdrReader<'a> {
    /// A reader positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unconsumed bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, what: &'static str) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            len => Err(DecodeError::Trailing { what, len }),
        }
    }

    /// Takes exactly `n` bytes.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let have = self.remaining();
        if n > have {
            return Err(DecodeError::Truncated {
                what,
                need: n,
                have,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Takes exactly `N` bytes as a fixed-size array: one bounds check for
    /// a whole fixed-size structure, whose fields then need none.
    #[inline]
    pub fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<&'a [u8; N], DecodeError> {
        let s = self.take(N, what)?;
        s.try_into().map_err(|_| DecodeError::Truncated {
            what,
            need: N,
            have: s.len(),
        })
    }

    /// Reads an unsigned 32-bit integer.
    #[inline]
    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a signed 32-bit integer.
    pub fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        Ok(self.u32(what)? as i32)
    }

    /// Reads an unsigned hyper (64-bit) integer.
    #[inline]
    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let hi = self.u32(what)? as u64;
        let lo = self.u32(what)? as u64;
        Ok(hi << 32 | lo)
    }

    /// Reads a boolean. RFC 4506 §4.4 allows only 0 and 1; anything else is
    /// read as `true` rather than failing the whole reply, since the intent
    /// ("non-zero") is clear and strictness would only turn an odd server into
    /// an outage.
    #[inline]
    pub fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        Ok(self.u32(what)? != 0)
    }

    /// Reads fixed-length opaque data of `n` bytes plus its padding.
    pub fn opaque_fixed(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let data = self.take(n, what)?;
        self.take(pad_len(n), what)?;
        Ok(data)
    }

    /// Reads variable-length opaque data (`opaque<max>`), borrowing it.
    /// The length is checked against `max` and the bytes present before
    /// anything is sliced.
    pub fn opaque(&mut self, max: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(DecodeError::TooLong {
                what,
                len: len as u64,
                max: max as u64,
            });
        }
        self.opaque_fixed(len, what)
    }

    /// Reads an array length (`T<max>`), checked against `max` and against
    /// the bytes left, assuming each element takes at least `min_elem_size`
    /// bytes: the count can then never make the caller pre-allocate more
    /// than the input could hold.
    pub fn array_len(
        &mut self,
        max: usize,
        min_elem_size: usize,
        what: &'static str,
    ) -> Result<usize, DecodeError> {
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(DecodeError::TooLong {
                what,
                len: len as u64,
                max: max as u64,
            });
        }
        let need = len.saturating_mul(min_elem_size.max(1));
        if need > self.remaining() {
            return Err(DecodeError::Truncated {
                what,
                need,
                have: self.remaining(),
            });
        }
        Ok(len)
    }
}

/// XDR encoding helpers on `Vec<u8>`.
pub trait XdrWrite {
    /// Appends an unsigned 32-bit integer.
    fn put_u32(&mut self, v: u32);
    /// Appends an unsigned hyper.
    fn put_u64(&mut self, v: u64);
    /// Appends a boolean.
    fn put_bool(&mut self, v: bool);
    /// Appends fixed-length opaque data and its padding.
    fn put_opaque_fixed(&mut self, data: &[u8]);
    /// Appends variable-length opaque data: length, bytes, padding.
    fn put_opaque(&mut self, data: &[u8]);
}

impl XdrWrite for Vec<u8> {
    #[inline]
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    #[inline]
    fn put_bool(&mut self, v: bool) {
        self.put_u32(v as u32);
    }
    #[inline]
    fn put_opaque_fixed(&mut self, data: &[u8]) {
        self.extend_from_slice(data);
        self.extend_from_slice(&[0u8; 3][..pad_len(data.len())]);
    }
    #[inline]
    fn put_opaque(&mut self, data: &[u8]) {
        self.put_u32(data.len() as u32);
        self.put_opaque_fixed(data);
    }
}

impl Encode for u32 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(*self);
    }
}
impl Decode for u32 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        r.u32("uint32")
    }
}
impl Encode for u64 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(*self);
    }
}
impl Decode for u64 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        r.u64("uint64")
    }
}
/// XDR `hyper` (RFC 4506 §4.5): the same 64 bits as `unsigned hyper`,
/// two's complement.
impl Encode for i64 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(*self as u64);
    }
}
impl Decode for i64 {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        Ok(r.u64("hyper")? as i64)
    }
}
impl Encode for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_bool(*self);
    }
}
impl Decode for bool {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        r.bool("bool")
    }
}

/// XDR optional data (`*T`): a boolean then, if true, the value.
impl<T: Encode> Encode for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.put_bool(false),
            Some(v) => {
                out.put_bool(true);
                v.encode(out);
            }
        }
    }
}
impl<T: Decode> Decode for Option<T> {
    fn decode(r: &mut XdrReader<'_>) -> Result<Self, DecodeError> {
        if r.bool("optional-data")? {
            Ok(Some(T::decode(r)?))
        } else {
            Ok(None)
        }
    }
}

/// Declares a newtype over a `u32` wire enum with named constants.
/// Unknown values are kept: `Debug` prints the name when known, the number
/// in hex otherwise.
#[macro_export]
macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $value:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[allow(non_camel_case_types)]
        pub struct $name(pub u32);
        #[allow(missing_docs)]
        impl $name {
            $($(#[$vm])* pub const $variant: $name = $name($value);)*
            /// The RFC name of this value, if it is one this crate knows.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($variant)),)*
                    _ => None,
                }
            }
        }
        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(self, f)
            }
        }
        impl $crate::xdr::Encode for $name {
            fn encode(&self, out: &mut Vec<u8>) {
                $crate::xdr::XdrWrite::put_u32(out, self.0);
            }
        }
        impl $crate::xdr::Decode for $name {
            fn decode(r: &mut $crate::xdr::XdrReader<'_>) -> Result<Self, $crate::xdr::DecodeError> {
                Ok($name(r.u32(stringify!($name))?))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_is_padded_to_four_bytes() {
        let mut v = Vec::new();
        v.put_opaque(b"abcde");
        assert_eq!(v, [0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        let mut r = XdrReader::new(&v);
        assert_eq!(r.opaque(8, "x").unwrap(), b"abcde");
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn rejects_opaque_longer_than_bound_before_slicing() {
        let v = [0xff, 0xff, 0xff, 0xff];
        let err = XdrReader::new(&v).opaque(64, "nfs_fh3").unwrap_err();
        assert_eq!(
            err,
            DecodeError::TooLong {
                what: "nfs_fh3",
                len: 0xffff_ffff,
                max: 64
            }
        );
    }

    #[test]
    fn truncated_opaque_is_an_error() {
        let v = [0, 0, 0, 8, 1, 2, 3];
        assert!(matches!(
            XdrReader::new(&v).opaque(64, "x"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn array_len_cannot_exceed_remaining_input() {
        let v = [0, 0, 0, 100, 0, 0, 0, 0];
        assert!(XdrReader::new(&v).array_len(1000, 4, "gids").is_err());
    }

    #[test]
    fn hyper_is_big_endian() {
        let mut v = Vec::new();
        v.put_u64(0x0102_0304_0506_0708);
        assert_eq!(v, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(XdrReader::new(&v).u64("x").unwrap(), 0x0102_0304_0506_0708);
    }

    #[allow(dead_code)]
    mod test_enum {
        wire_enum!(
            /// test enum
            TestStat { OK = 0, BAD = 5 }
        );
    }
    use test_enum::TestStat;

    #[test]
    fn unknown_enum_values_survive_and_print_in_hex() {
        let s: TestStat = decode_exact(&[0, 0, 0x27, 0x11], "t").unwrap();
        assert_eq!(s, TestStat(0x2711));
        assert_eq!(format!("{s:?}"), "TestStat(0x2711)");
        assert_eq!(format!("{:?}", TestStat::BAD), "BAD");
    }
}
