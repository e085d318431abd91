//! Micro-benchmarks of krb5p's per-message cost: an RFC 4121 Wrap token of
//! 1 MiB made and opened in-process (`security/cfx.rs`, `enctype.rs`) for
//! each AES enctype, and next to them the floor the primitives set: AES
//! decryption of 1 MiB eight blocks at a time, the HMAC of 1 MiB, and a
//! copy of 1 MiB.
//!
//! Timed in the thread's CPU time, not wall-clock time: on the shared test
//! machine other jobs take the cores, and the cost per byte is what is
//! asked (it compares with the bench's client CPU per GB).
//!
//! `cargo bench -p directnfs --bench krb5p` (add `-- --quick` for a fast
//! pass). The test realm's KDC issues aes256-cts-hmac-sha1-96 (18).

// Set-up that cannot fail (keys of valid lengths) panics if it does.
#![allow(clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use aes::cipher::{BlockDecrypt, KeyInit};
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use directnfs::security::cfx::{CfxContext, CfxKeys};
use hmac::{Hmac, Mac};

const MIB: usize = 1 << 20;

/// An initiator and an acceptor sharing one context key of `enctype`.
fn pair(enctype: u32) -> (CfxContext, CfxContext) {
    let len = if enctype == 17 || enctype == 19 {
        16
    } else {
        32
    };
    let key = vec![0x5Au8; len];
    let side = |initiator| {
        CfxContext::new(&CfxKeys {
            initiator,
            send_seq: 1,
            ctx_key: (enctype, &key),
            acceptor_subkey: None,
        })
        .expect("context")
    };
    (side(true), side(false))
}

/// The calling thread's CPU time.
struct ThreadCpu;

fn thread_cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_now()
    }
    fn end(&self, i: Duration) -> Duration {
        thread_cpu_now().saturating_sub(i)
    }
    fn add(&self, v1: &Duration, v2: &Duration) -> Duration {
        *v1 + *v2
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        // Nanoseconds, as wall-clock time's are.
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

fn tokens(c: &mut Criterion<ThreadCpu>) {
    let data: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
    let mut g = c.benchmark_group("krb5p_1mib");
    g.throughput(Throughput::Bytes(MIB as u64));
    for enctype in [18u32, 17, 20] {
        let (client, server) = pair(enctype);
        // What the client sends: a WRITE's data sealed.
        let mut token = Vec::with_capacity(MIB + 128);
        g.bench_function(format!("wrap_e{enctype}"), |b| {
            b.iter(|| {
                token.clear();
                client.wrap(&[black_box(&data[..])], true, &mut token);
                black_box(token.len())
            })
        });
        // What it receives: a READ reply's data sealed by the server.
        let mut reply = Vec::new();
        server.wrap(&[&data[..]], true, &mut reply);
        let mut out = Vec::with_capacity(MIB + 128);
        g.bench_function(format!("unwrap_e{enctype}"), |b| {
            b.iter(|| {
                out.clear();
                let (r, _) = client
                    .unwrap_append(black_box(&reply), &mut out)
                    .expect("opens");
                black_box(r.len())
            })
        });
    }
    g.finish();
}

fn floor(c: &mut Criterion<ThreadCpu>) {
    let data: Vec<u8> = (0..MIB).map(|i| (i * 7 % 251) as u8).collect();
    let mut g = c.benchmark_group("floor_1mib");
    g.throughput(Throughput::Bytes(MIB as u64));
    let aes = aes::Aes256::new(&[0x5Au8; 32].into());
    let mut out = vec![0u8; MIB];
    g.bench_function("aes256_decrypt_blocks", |b| {
        b.iter(|| {
            out.copy_from_slice(&data);
            let blocks = unsafe_free_blocks(&mut out);
            aes.decrypt_blocks(blocks);
            black_box(out[0])
        })
    });
    let mac = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(&[0x5A; 32]).expect("key");
    g.bench_function("hmac_sha1", |b| {
        b.iter(|| {
            let mut m = mac.clone();
            m.update(black_box(&data));
            black_box(m.finalize().into_bytes())
        })
    });
    let mac = <Hmac<sha2::Sha384> as KeyInit>::new_from_slice(&[0x5A; 24]).expect("key");
    g.bench_function("hmac_sha384", |b| {
        b.iter(|| {
            let mut m = mac.clone();
            m.update(black_box(&data));
            black_box(m.finalize().into_bytes())
        })
    });
    g.bench_function("copy", |b| {
        b.iter(|| {
            out.copy_from_slice(black_box(&data));
            black_box(out[0])
        })
    });
    g.finish();
}

/// `buf` as AES blocks (its length a multiple of 16).
fn unsafe_free_blocks(buf: &mut [u8]) -> &mut [aes::Block] {
    let (blocks, _) = aes::cipher::inout::InOutBuf::from(buf).into_chunks();
    blocks.into_out()
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = tokens, floor
}
criterion_main!(benches);
