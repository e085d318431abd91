#![no_main]
use directnfs_fuzz::*;
libfuzzer_sys::fuzz_target!(|d: &[u8]| tls_probe_answer(d));
