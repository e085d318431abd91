#![no_main]
use directnfs_fuzz::*;
libfuzzer_sys::fuzz_target!(|d: &[u8]| roundtrip::<nfs3::READLINK3res>(d));
