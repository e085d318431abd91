#![no_main]
use directnfs_fuzz::*;
use directnfs_fuzz::nlm4::{nlm4_res, nlm4_testres};
libfuzzer_sys::fuzz_target!(|d: &[u8]| {
    roundtrip::<nlm4_res>(d);
    roundtrip::<nlm4_testres>(d);
});
