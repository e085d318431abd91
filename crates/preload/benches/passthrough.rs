//! What the interception library adds to calls it does not serve: each
//! call on a local path or descriptor, made once through libc directly and
//! once through the library's entry point of the same name (loaded from
//! `target/release/libdirectnfs_preload.so` with a dnfstab that has mount
//! prefixes, so every path is really compared with them). The difference
//! of each pair is the added cost (the target is at most 50 ns).
//!
//! `cargo build --release -p directnfs-preload && cargo bench -p directnfs-preload --bench passthrough`
//!
//! `$DIRECTNFS_PRELOAD` names another build of the library.

// A bench: a panic is the failure report.
#![allow(clippy::expect_used)]

use std::ffi::{c_char, c_int, c_void, CString};
use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};

type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, libc::mode_t) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;

/// The library's entry points, loaded privately (RTLD_LOCAL: the bench's
/// own libc calls stay libc's).
struct Preload {
    _lib: libloading::Library,
    stat: StatFn,
    fstat: FstatFn,
    read: ReadFn,
    open: OpenFn,
    close: CloseFn,
    access: AccessFn,
}

fn library_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DIRECTNFS_PRELOAD") {
        return PathBuf::from(p);
    }
    // target/release/deps/passthrough-HASH -> target/release/
    let exe = std::env::current_exe().expect("the bench's own path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target/release")
        .join("libdirectnfs_preload.so")
}

fn load() -> Preload {
    // Mount prefixes the paths are compared with; no server is contacted
    // (no path under them is used).
    let tab = std::env::temp_dir().join(format!("dnfs-passthrough-{}.tab", std::process::id()));
    std::fs::write(
        &tab,
        "server: bench\npath: 127.0.0.1\nexport: /a mount: /db/oradata\nexport: /b mount: /db/redo\nexport: /c mount: /u02/app/data\n",
    )
    .expect("write the bench dnfstab");
    std::env::set_var("DIRECTNFS_TAB", &tab);
    let path = library_path();
    // SAFETY: our own library; its constructor reads the dnfstab above.
    let lib = unsafe { libloading::Library::new(&path) }.unwrap_or_else(|e| {
        panic!(
            "{}: {e} (cargo build --release -p directnfs-preload first)",
            path.display()
        )
    });
    // SAFETY: the symbols have the C prototypes declared above.
    unsafe {
        let p = Preload {
            stat: *lib.get::<StatFn>(b"stat\0").expect("stat"),
            fstat: *lib.get::<FstatFn>(b"fstat\0").expect("fstat"),
            read: *lib.get::<ReadFn>(b"read\0").expect("read"),
            open: *lib.get::<OpenFn>(b"open\0").expect("open"),
            close: *lib.get::<CloseFn>(b"close\0").expect("close"),
            access: *lib.get::<AccessFn>(b"access\0").expect("access"),
            _lib: lib,
        };
        let _ = std::fs::remove_file(&tab);
        p
    }
}

fn bench(c: &mut Criterion) {
    let p = load();
    let path = CString::new("/usr/lib/x86_64-linux-gnu/libc.so.6").expect("no NUL");
    let relative = CString::new("Cargo.toml").expect("no NUL");
    let devnull = CString::new("/dev/null").expect("no NUL");
    // SAFETY: plain libc calls on valid arguments.
    let zero = unsafe { libc::open(c"/dev/zero".as_ptr(), libc::O_RDONLY) };
    assert!(zero >= 0);
    // SAFETY: all-zero is a valid struct stat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let mut byte = [0u8; 1];

    let mut g = c.benchmark_group("stat absolute local path");
    // SAFETY (all closures below): valid C strings, buffers and descriptors.
    g.bench_function("libc", |b| {
        b.iter(|| unsafe { libc::stat(black_box(path.as_ptr()), &mut st) })
    });
    g.bench_function("preload", |b| {
        b.iter(|| unsafe { (p.stat)(black_box(path.as_ptr()), &mut st) })
    });
    g.finish();

    let mut g = c.benchmark_group("access relative local path");
    g.bench_function("libc", |b| {
        b.iter(|| unsafe { libc::access(black_box(relative.as_ptr()), libc::R_OK) })
    });
    g.bench_function("preload", |b| {
        b.iter(|| unsafe { (p.access)(black_box(relative.as_ptr()), libc::R_OK) })
    });
    g.finish();

    let mut g = c.benchmark_group("open+close /dev/null");
    g.bench_function("libc", |b| {
        b.iter(|| unsafe { libc::close(libc::open(black_box(devnull.as_ptr()), libc::O_RDONLY)) })
    });
    g.bench_function("preload", |b| {
        b.iter(|| unsafe { (p.close)((p.open)(black_box(devnull.as_ptr()), libc::O_RDONLY, 0)) })
    });
    g.finish();

    let mut g = c.benchmark_group("read 1 byte of /dev/zero");
    g.bench_function("libc", |b| {
        b.iter(|| unsafe { libc::read(black_box(zero), byte.as_mut_ptr().cast(), 1) })
    });
    g.bench_function("preload", |b| {
        b.iter(|| unsafe { (p.read)(black_box(zero), byte.as_mut_ptr().cast(), 1) })
    });
    g.finish();

    let mut g = c.benchmark_group("fstat local descriptor");
    g.bench_function("libc", |b| {
        b.iter(|| unsafe { libc::fstat(black_box(zero), &mut st) })
    });
    g.bench_function("preload", |b| {
        b.iter(|| unsafe { (p.fstat)(black_box(zero), &mut st) })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
