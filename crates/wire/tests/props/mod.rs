//! Property-test helpers shared by the NFSv3 and NFSv4.1 suites.
#![allow(dead_code)]

use directnfs_wire::xdr::{decode_exact, to_bytes, Decode, Encode};
use proptest::prelude::*;

/// `decode(encode(x)) == x`, the encoding is whole XDR units, and every
/// strict prefix is refused (the encoding is self-delimiting and nothing
/// is optional at the end).
pub fn roundtrip<T: Encode + Decode + PartialEq + std::fmt::Debug>(
    x: &T,
) -> Result<(), TestCaseError> {
    let bytes = to_bytes(x);
    prop_assert_eq!(bytes.len() % 4, 0, "XDR is made of 4-byte units");
    let back: T =
        decode_exact(&bytes, "roundtrip").map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back, x);
    if let Some(cut) = bytes.len().checked_sub(1) {
        prop_assert!(decode_exact::<T>(&bytes[..cut], "prefix").is_err());
    }
    Ok(())
}

/// Damages a valid encoding: overwrite one word, then maybe truncate.
pub fn damaged<T: Encode + std::fmt::Debug>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Vec<u8>> {
    (
        s,
        any::<prop::sample::Index>(),
        any::<u32>(),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(x, at, word, cut, truncate)| {
            let mut b = to_bytes(&x);
            if !b.is_empty() {
                let i = at.index(b.len()) & !3;
                let end = (i + 4).min(b.len());
                b[i..end].copy_from_slice(&word.to_be_bytes()[..end - i]);
                if truncate {
                    b.truncate(cut.index(b.len()));
                }
            }
            b
        })
}

/// One `decode(encode(x)) == x` property test per `name: strategy;` line.
#[allow(unused_macros)] // the never-panic suites use only `damaged`
macro_rules! roundtrips {
    ($($name:ident: $strategy:expr;)*) => {
        proptest::proptest! {
            $(
                #[test]
                fn $name(x in $strategy) {
                    $crate::props::roundtrip(&x)?;
                }
            )*
        }
    };
}
#[allow(unused_imports)] // the never-panic suites use only `damaged`
pub(crate) use roundtrips;
