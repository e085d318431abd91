//! NFSv4.1 against a real server, shared by the live test
//! (`ganesha_v41_live.rs`), the golden test of the captured records
//! (`ganesha_v41.rs`) and the `capture_v41` example that captures them.
#![allow(dead_code)]

pub mod client;
pub mod facts;
pub mod scenario;
