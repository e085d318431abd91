//! Micro-benchmarks of the per-I/O hot path, to catch regressions:
//! READ/WRITE argument encoding and reply decoding, XID lookup in the
//! in-flight table, and the latency histogram's `record`.
//!
//! `cargo bench -p directnfs --bench hotpath` (add `-- --quick` for a fast
//! pass).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use directnfs_engine::inflight::InflightTable;
use directnfs_engine::stats::Histogram;
use directnfs_wire::nfs3::{
    decode_read_reply, decode_write_reply, encode_read_args, encode_write_args_header, stable_how,
};
use directnfs_wire::xdr::XdrWrite;
use directnfs_wire::XdrReader;

/// A 32-byte file handle, the size Ganesha's VFS FSAL hands out.
const FH: [u8; 32] = [0x43; 32];

fn fattr3(out: &mut Vec<u8>) {
    out.put_u32(1); // NF3REG
    out.put_u32(0o644);
    out.put_u32(1); // nlink
    out.put_u32(1000);
    out.put_u32(1000);
    out.put_u64(1 << 30); // size
    out.put_u64(1 << 30); // used
    out.put_u32(0); // rdev
    out.put_u32(0);
    out.put_u64(0x1234); // fsid
    out.put_u64(0x5678); // fileid
    for _ in 0..3 {
        out.put_u32(1_700_000_000); // seconds
        out.put_u32(0); // nseconds
    }
}

/// READ3res, NFS3_OK, with attributes and `len` data bytes.
fn read_reply(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 128);
    out.put_u32(0); // NFS3_OK
    out.put_bool(true);
    fattr3(&mut out);
    out.put_u32(len as u32); // count
    out.put_bool(false); // eof
    out.put_opaque(&vec![0xAB; len]);
    out
}

/// WRITE3res, NFS3_OK, FILE_SYNC, with full wcc_data.
fn write_reply(count: u32) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32(0); // NFS3_OK
    out.put_bool(true); // pre_op_attr
    out.put_u64(1 << 30);
    for _ in 0..2 {
        out.put_u32(1_700_000_000);
        out.put_u32(0);
    }
    out.put_bool(true); // post_op_attr
    fattr3(&mut out);
    out.put_u32(count);
    out.put_u32(2); // FILE_SYNC
    out.put_u64(0x0102_0304_0506_0708); // verifier
    out
}

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(1));
    let mut buf = Vec::with_capacity(256);
    g.bench_function("encode_read_args", |b| {
        b.iter(|| {
            buf.clear();
            encode_read_args(
                &mut buf,
                black_box(&FH),
                black_box(8192 * 77),
                black_box(8192),
            );
            black_box(buf.len())
        })
    });
    g.bench_function("encode_write_args_header", |b| {
        b.iter(|| {
            buf.clear();
            encode_write_args_header(
                &mut buf,
                black_box(&FH),
                black_box(8192 * 77),
                black_box(8192),
                stable_how::FILE_SYNC,
            );
            black_box(buf.len())
        })
    });
    for len in [8192usize, 1 << 20] {
        let reply = read_reply(len);
        g.bench_function(format!("decode_read_reply/{}k", len >> 10), |b| {
            b.iter(|| {
                let mut r = XdrReader::new(black_box(&reply));
                let rep = decode_read_reply(&mut r, len as u32);
                black_box(rep.map(|x| x.ok.map(|o| o.count)).ok())
            })
        });
    }
    let wr = write_reply(8192);
    g.bench_function("decode_write_reply", |b| {
        b.iter(|| {
            let mut r = XdrReader::new(black_box(&wr));
            black_box(
                decode_write_reply(&mut r)
                    .map(|x| x.ok.map(|o| o.count))
                    .ok(),
            )
        })
    });
    g.finish();
}

fn inflight(c: &mut Criterion) {
    let mut g = c.benchmark_group("inflight");
    g.throughput(Throughput::Elements(1));
    // Steady state of a channel with 128 requests in flight: every
    // iteration answers the oldest (XID lookup + take) and sends a new one.
    g.bench_function("insert_take_depth128", |b| {
        let mut t: InflightTable<u64> = InflightTable::new(256, 0x5eed);
        let mut ring = std::collections::VecDeque::with_capacity(128);
        for i in 0..128u64 {
            ring.push_back(t.insert(i, i).unwrap_or(0));
        }
        let mut n = 128u64;
        b.iter(|| {
            let xid = ring.pop_front().unwrap_or(0);
            let v = t.take(black_box(xid));
            n += 1;
            ring.push_back(t.insert(n, n).unwrap_or(0));
            black_box(v)
        })
    });
    g.bench_function("take_stale_xid", |b| {
        let mut t: InflightTable<u64> = InflightTable::new(256, 1);
        let xid = t.insert(1, 0).unwrap_or(0);
        let _ = t.take(xid);
        let _ = t.insert(2, 0);
        b.iter(|| black_box(t.get(black_box(xid)).copied()))
    });
    g.finish();
}

fn histogram(c: &mut Criterion) {
    let mut g = c.benchmark_group("histogram");
    g.throughput(Throughput::Elements(1));
    let h = Histogram::new();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    g.bench_function("record", |b| {
        b.iter(|| {
            // 50 µs .. ~1 ms, varied so different buckets are hit
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.record(black_box(50_000 + (x & 0xF_FFFF)));
        })
    });
    g.bench_function("snapshot_percentiles", |b| {
        b.iter_batched(
            || (),
            |_| {
                let s = h.snapshot();
                black_box((s.percentile(50.0), s.percentile(99.0), s.mean()))
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, codec, inflight, histogram);
criterion_main!(benches);
