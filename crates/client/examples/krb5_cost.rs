//! What Kerberos costs the client: a file of MIB mebibytes written and
//! read back in 1 MiB calls, one at a time, with sys (the client's
//! pipelined path, `Client`) and with krb5, krb5i and krb5p (RPCSEC_GSS on
//! one blocking connection, `directnfs::security::GssConnection`, the only
//! Kerberos path so far). Prints the read throughput and the client's CPU
//! seconds (user + system, this process) per GiB read, per flavor.
//!
//! ```sh
//! eval "$(scripts/server/kdc.sh env | sed 's/^/export /')"
//! cargo run --release -p directnfs --example krb5_cost -- "$KRB5_SERVER_URL" 256
//! ```
//!
//! The URL is an NFSv3 one (`nfsport=`, `mountport=`) of a server started
//! with `DNFS_KRB5=1`. Loopback, server and client on one machine: the
//! throughput is the pair's, the CPU per GiB the client's alone.

use std::error::Error;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use directnfs::security::{Flavor, GssConnection};
use directnfs::{Client, OpenOptions};
use directnfs_wire::mount::{dirpath, mountres3, MOUNTPROC3_MNT, MOUNT_PROGRAM, MOUNT_V3};
use directnfs_wire::nfs3::{
    createhow3, diropargs3, filename3, nfs_fh3, sattr3, stable_how, CREATE3args, CREATE3res,
    Nfs3Res, READ3args, READ3res, WRITE3args, WRITE3res, NFSPROC3_CREATE, NFSPROC3_READ,
    NFSPROC3_WRITE, NFS_PROGRAM, NFS_V3,
};
use directnfs_wire::xdr::{decode_exact, to_bytes};

type Res<T> = std::result::Result<T, Box<dyn Error>>;

const TIMEOUT: Duration = Duration::from_secs(60);
const CHUNK: usize = 1 << 20;

/// Process CPU time (user + system) so far.
fn cpu() -> Duration {
    // SAFETY: getrusage writes one rusage into the zeroed struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn port(query: &str, key: &str) -> Res<u16> {
    Ok(query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .ok_or(format!("no {key} in the URL"))?
        .parse()?)
}

fn report(flavor: &str, bytes: usize, wall: Duration, cpu: Duration) {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    println!(
        "{flavor:6} read {:8.1} MB/s  client CPU {:6.2} s/GiB",
        bytes as f64 / wall.as_secs_f64() / 1e6,
        cpu.as_secs_f64() / gib
    );
}

fn call(conn: &mut GssConnection, proc_: u32, args: &[u8]) -> Res<Vec<u8>> {
    Ok(conn.call(proc_, args, TIMEOUT)?)
}

fn kerberos(
    flavor: Flavor,
    host: &str,
    path: &str,
    nfs: SocketAddr,
    mnt: SocketAddr,
    mib: usize,
) -> Res<()> {
    let mut m = GssConnection::establish(
        TcpStream::connect(mnt)?,
        host,
        (MOUNT_PROGRAM, MOUNT_V3),
        flavor,
        TIMEOUT,
    )?;
    let root: nfs_fh3 = match decode_exact::<mountres3>(
        &call(
            &mut m,
            MOUNTPROC3_MNT,
            &to_bytes(&dirpath(path.as_bytes().to_vec())),
        )?,
        "MNT",
    )? {
        mountres3::Ok(ok) => ok.fhandle,
        mountres3::Err(s) => return Err(format!("MNT {path}: {s:?}").into()),
    };
    let mut c = GssConnection::establish(
        TcpStream::connect(nfs)?,
        host,
        (NFS_PROGRAM, NFS_V3),
        flavor,
        TIMEOUT,
    )?;
    let name = format!("krb5-cost-{}-{}", flavor.name(), std::process::id());
    let create = CREATE3args {
        where_: diropargs3 {
            dir: root,
            name: filename3(name.into_bytes()),
        },
        how: createhow3::Unchecked(sattr3::default()),
    };
    let fh = match decode_exact::<CREATE3res>(
        &call(&mut c, NFSPROC3_CREATE, &to_bytes(&create))?,
        "CREATE",
    )? {
        Nfs3Res::Ok(ok) => ok.obj.ok_or("CREATE without a handle")?,
        Nfs3Res::Fail(s, _) => return Err(format!("CREATE: {s:?}").into()),
    };
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 253) as u8).collect();
    for i in 0..mib {
        let w = WRITE3args {
            file: fh,
            offset: (i * CHUNK) as u64,
            count: CHUNK as u32,
            stable: stable_how::UNSTABLE,
            data: data.clone(),
        };
        if let Nfs3Res::Fail(s, _) =
            decode_exact::<WRITE3res>(&call(&mut c, NFSPROC3_WRITE, &to_bytes(&w))?, "WRITE")?
        {
            return Err(format!("WRITE: {s:?}").into());
        }
    }
    let (t0, c0) = (Instant::now(), cpu());
    for i in 0..mib {
        let r = READ3args {
            file: fh,
            offset: (i * CHUNK) as u64,
            count: CHUNK as u32,
        };
        match decode_exact::<READ3res>(&call(&mut c, NFSPROC3_READ, &to_bytes(&r))?, "READ")? {
            Nfs3Res::Ok(ok) if ok.data == data => {}
            Nfs3Res::Ok(_) => return Err("READ: other data than written".into()),
            Nfs3Res::Fail(s, _) => return Err(format!("READ: {s:?}").into()),
        }
    }
    report(flavor.name(), mib * CHUNK, t0.elapsed(), cpu() - c0);
    Ok(())
}

fn sys(url: &str, mib: usize) -> Res<()> {
    let client = Client::connect(url)?;
    let path = directnfs::config::join(
        client.target_path(),
        &format!("krb5-cost-sys-{}", std::process::id()),
    );
    let file = client.open_with(
        &path,
        OpenOptions {
            create: true,
            truncate: true,
            ..OpenOptions::default()
        },
    )?;
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 253) as u8).collect();
    for i in 0..mib {
        file.write_all_at(&data, (i * CHUNK) as u64)?;
    }
    let mut back = vec![0u8; CHUNK];
    let (t0, c0) = (Instant::now(), cpu());
    for i in 0..mib {
        file.read_exact_at(&mut back, (i * CHUNK) as u64)?;
        if back != data {
            return Err("read other data than written".into());
        }
    }
    report("sys", mib * CHUNK, t0.elapsed(), cpu() - c0);
    Ok(())
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: krb5_cost NFS_URL [MIB]")?;
    let mib: usize = args.next().map_or(Ok(64), |s| s.parse())?;
    let rest = url.strip_prefix("nfs://").ok_or("not an nfs:// URL")?;
    let (host_path, query) = rest
        .split_once('?')
        .ok_or("the URL needs nfsport= and mountport=")?;
    let slash = host_path.find('/').ok_or("the URL has no path")?;
    let (host, path) = host_path.split_at(slash);
    let addr = |p: u16| -> Res<SocketAddr> {
        (host, p)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| "no address".into())
    };
    let (nfs, mnt) = (
        addr(port(query, "nfsport")?)?,
        addr(port(query, "mountport")?)?,
    );
    sys(&url, mib)?;
    for flavor in [Flavor::Krb5, Flavor::Krb5i, Flavor::Krb5p] {
        kerberos(flavor, host, path, nfs, mnt, mib)?;
    }
    Ok(())
}
