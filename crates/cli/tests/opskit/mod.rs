//! What the ops tests share: the worker process (this test binary run
//! again with `DNFS_OPS_WORKER` set: it mounts the server, does the I/O it
//! is told, prints `WORKER ...` lines, and before it exits prints its own
//! published statistics), the harness that starts and reads workers, and
//! small helpers (HTTP, PromQL, permissions).
//!
//! Worker environment: `DNFS_OPS_URL` (or `DNFS_OPS_TAB` + `DNFS_OPS_FILE`:
//! a dnfstab and a path under its `mount:` prefix), `DNFS_OPS_READS`,
//! `DNFS_OPS_WRITES` (8 KiB each, after filling 128 blocks),
//! `DNFS_OPS_PACE` (operations per second, 0 = as fast as it goes),
//! `DNFS_OPS_UNTIL_RELEASE=1` (3 reads and 1 write, over and over, until
//! released), `DNFS_OPS_RELEASE` (the file whose existence lets it exit),
//! `DNFS_OPS_FORK=1` (fork; the child mounts a client of its own).

#![allow(dead_code)]
// Test harness code outside #[test] functions: a failed expectation is a
// test failure, said in words.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use directnfs::stats::{HostStats, ProcessStats};

use super::common::{self, dnfs, unique, Scratch};

/// Defines the `#[test] fn ops_worker` entry of a test binary: the
/// workers are that binary run again with `DNFS_OPS_WORKER` set.
#[macro_export]
macro_rules! ops_worker_entry {
    () => {
        /// A directnfs process of the tests (see `opskit`); does nothing
        /// unless `DNFS_OPS_WORKER` is set.
        #[test]
        #[ignore = "a worker process of the ops tests, run by them"]
        fn ops_worker() {
            if std::env::var_os("DNFS_OPS_WORKER").is_none() {
                return;
            }
            opskit::worker::run();
        }
    };
}

pub mod worker {
    use super::*;

    fn var(name: &str) -> String {
        std::env::var(name).unwrap_or_default()
    }

    fn num(name: &str) -> u64 {
        var(name).parse().unwrap_or(0)
    }

    /// Mounts `DNFS_OPS_URL`, or the file `DNFS_OPS_FILE` under a mount:
    /// prefix of the dnfstab `DNFS_OPS_TAB` (several paths).
    fn mount() -> (directnfs::Client, directnfs::File) {
        let tab = var("DNFS_OPS_TAB");
        if tab.is_empty() {
            let url = var("DNFS_OPS_URL");
            let client = directnfs::Client::connect(&url).expect("worker mount");
            let file = client.create(client.target_path()).expect("worker create");
            return (client, file);
        }
        let tab = directnfs::config::load(Path::new(&tab)).expect("dnfstab");
        let r = tab.resolve(&var("DNFS_OPS_FILE")).expect("a mount: path");
        let target = directnfs::Target {
            name: r.server.name.clone(),
            paths: r
                .server
                .paths
                .iter()
                .map(|p| directnfs::PathSpec {
                    local: p
                        .local
                        .as_deref()
                        .map(|l| l.parse().expect("local address")),
                    server: p.server.clone(),
                })
                .collect(),
            export: Some(r.export.export.clone()),
            path: format!("{}/{}", r.export.export, r.rest.trim_start_matches('/')),
            options: r.server.options.clone(),
        };
        let client = directnfs::Client::mount(&target).expect("worker mount");
        let file = client.create(client.target_path()).expect("worker create");
        (client, file)
    }

    pub fn run() {
        let url = var("DNFS_OPS_URL");
        let (client, file) = mount();
        say(&format!("READY {}", std::process::id()));
        if var("DNFS_OPS_FORK") == "1" {
            return fork_child(&url, &client);
        }
        let block = vec![0x5au8; 8192];
        let blocks = 128u64;
        for i in 0..blocks {
            file.write_at(&block, i * 8192).expect("fill");
        }
        let (reads, writes) = (num("DNFS_OPS_READS"), num("DNFS_OPS_WRITES"));
        let pace = num("DNFS_OPS_PACE");
        // Until released: alternate 3 reads and 1 write, paced.
        let endless = var("DNFS_OPS_UNTIL_RELEASE") == "1";
        let release = var("DNFS_OPS_RELEASE");
        let start = Instant::now();
        let mut buf = vec![0u8; 8192];
        let mut rng = u64::from(std::process::id()) | 1;
        let total = if endless { u64::MAX } else { reads + writes };
        for n in 0..total {
            if endless && n % 64 == 0 && Path::new(&release).exists() {
                break;
            }
            let read = if endless { n % 4 != 3 } else { n < reads };
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let at = (rng % blocks) * 8192;
            if read {
                file.read_at(&mut buf, at).expect("read");
            } else {
                file.write_at(&block, at).expect("write");
            }
            if pace > 0 {
                let due = start + Duration::from_secs_f64((n + 1) as f64 / pace as f64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
        }
        say(&format!("DONE {}", std::process::id()));
        wait_for_release();
        drop(client);
        final_report();
    }

    /// Forks; the child mounts its own client (as a preloaded database
    /// backend would) and publishes it under its own pid.
    fn fork_child(url: &str, _parent_client: &directnfs::Client) {
        // SAFETY: the child only mounts a client, prints and exits; the
        // parent's threads are not used there.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let c = directnfs::Client::connect(url).expect("child mount");
            let _f = c.open(c.target_path()).expect("child open");
            say(&format!("CHILD {}", std::process::id()));
            wait_for_release();
            final_report();
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        say("CHILD-EXITED");
        wait_for_file(&format!("{}.parent", var("DNFS_OPS_RELEASE")));
        final_report();
    }

    fn wait_for_file(path: &str) {
        let until = Instant::now() + Duration::from_secs(120);
        while !Path::new(path).exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_for_release() {
        wait_for_file(&var("DNFS_OPS_RELEASE"));
    }

    /// What this process publishes, as it exits.
    fn final_report() -> ! {
        let json = serde_json::to_string(&directnfs::publish::process_stats()).expect("json");
        say(&format!("FINAL {json}"));
        std::process::exit(0)
    }

    pub fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "WORKER {line}");
        let _ = out.flush();
    }
}

/// Runs `f` until it is true or `limit` passes (then fails naming `what`).
pub fn wait_until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn ok_out(out: &std::process::Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout.clone()
}

/// `dnfs stats --json`, keeping only `pids`.
pub fn host_of(pids: &[u32]) -> HostStats {
    let out = ok_out(&dnfs(&["stats", "--json"]));
    let mut host: HostStats = serde_json::from_slice(&out).expect("stats json");
    host.processes.retain(|p| pids.contains(&p.pid));
    host.unreadable.retain(|(p, _)| pids.contains(p));
    host
}

/// READ calls, WRITE calls, bytes read, bytes written over every server of
/// `procs`.
pub fn sum(procs: &[ProcessStats]) -> (u64, u64, u64, u64) {
    let mut t = (0, 0, 0, 0);
    for p in procs {
        for s in &p.stats.servers {
            t.0 += s.totals.calls_by_proc.get("READ").copied().unwrap_or(0);
            t.1 += s.totals.calls_by_proc.get("WRITE").copied().unwrap_or(0);
            t.2 += s.totals.bytes_read;
            t.3 += s.totals.bytes_written;
        }
    }
    t
}

pub fn endpoint_path(pid: u32) -> PathBuf {
    // SAFETY: geteuid takes nothing and cannot fail.
    let uid = unsafe { libc::geteuid() };
    directnfs::publish::process_dir(uid).join(format!("{pid}.sock"))
}

pub fn is_root() -> bool {
    // SAFETY: as above.
    unsafe { libc::geteuid() == 0 }
}

/// A copy of the dnfs binary that user nobody may run, in a scratch dir.
pub fn nobody_can_run_dnfs() -> (Scratch, PathBuf) {
    let s = Scratch::new("nobody");
    chmod(&s.0, 0o755);
    let copy = s.path("dnfs");
    std::fs::copy(env!("CARGO_BIN_EXE_dnfs"), &copy).expect("copy dnfs");
    chmod(&copy, 0o755);
    (s, copy)
}

pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

pub fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).expect("chown");
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A plain HTTP/1.0 GET: (status, body).
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

/// The value of a PromQL query whose result is one sample.
pub fn query_scalar(prom: &str, query: &str) -> f64 {
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (code, body) =
        http_get(prom, &format!("/api/v1/query?query={encoded}")).expect("query prometheus");
    assert_eq!(code, 200, "{query}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let result = &v["data"]["result"];
    assert_eq!(result.as_array().map(Vec::len), Some(1), "{query}: {body}");
    result[0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{query}: {body}"))
}

/// Kills the given pids when dropped (a failing test must not leave
/// servers or workers running).
pub struct KillOnDrop(pub Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: kill takes no pointers; these are our own children.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
    }
}

/// One worker process, its `WORKER ...` lines and its stderr.
pub struct Worker {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    /// Lines of its stderr (the alert log), with when they arrived.
    pub alerts: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Worker {
    /// The first stderr line containing every one of `words`, and when it
    /// arrived.
    pub fn alert(&self, words: &[&str]) -> Option<(Instant, String)> {
        self.alerts
            .lock()
            .expect("alerts")
            .iter()
            .find(|(_, l)| words.iter().all(|w| l.contains(w)))
            .cloned()
    }

    /// Waits for the next line starting with `WORKER WHAT`; returns the rest.
    pub fn expect(&mut self, what: &str) -> String {
        let prefix = format!("WORKER {what}");
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("worker {} never said {what}", self.child.id()));
            // libtest prints `test ops_worker ... ` before the first line.
            let line = line.find("WORKER ").map_or("", |i| &line[i..]);
            if let Some(rest) = line.strip_prefix(&prefix) {
                if rest.is_empty() || rest.starts_with(' ') {
                    return rest.trim().to_owned();
                }
            }
        }
    }
}

/// A worker on the file `name` of the test server.
pub fn spawn_worker(
    s: &common::Server,
    name: &str,
    release: &Path,
    extra: &[(&str, &str)],
) -> Worker {
    let url = s.url(name);
    let mut vars = vec![("DNFS_OPS_URL", url.as_str())];
    vars.extend_from_slice(extra);
    spawn_worker_with(release, &vars)
}

/// A worker told what to do by `vars` (see the module doc). Its stderr
/// (the alert log) is kept, line by line, with the time each line arrived.
pub fn spawn_worker_with(release: &Path, vars: &[(&str, &str)]) -> Worker {
    let mut c = Command::new(std::env::current_exe().expect("test binary"));
    c.args([
        "--exact",
        "ops_worker",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("DNFS_OPS_WORKER", "1")
    .env("DNFS_OPS_RELEASE", release)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in vars {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("spawn worker");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err = child.stderr.take().expect("stderr");
    let alerts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&alerts);
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            sink.lock().expect("alerts").push((Instant::now(), line));
        }
    });
    Worker {
        child,
        lines: rx,
        alerts,
    }
}

/// Several workers doing the same I/O on files of their own.
pub struct Workers {
    pub workers: Vec<Worker>,
    pub pids: Vec<u32>,
    pub release: PathBuf,
}

impl Workers {
    pub fn start(
        s: &common::Server,
        tag: &str,
        n: usize,
        reads: u64,
        writes: u64,
        pace: u64,
    ) -> Self {
        let (r, w, p) = (reads.to_string(), writes.to_string(), pace.to_string());
        Self::start_with(tag, n, |name, release| {
            spawn_worker(
                s,
                name,
                release,
                &[
                    ("DNFS_OPS_READS", &r),
                    ("DNFS_OPS_WRITES", &w),
                    ("DNFS_OPS_PACE", &p),
                ],
            )
        })
    }

    /// `n` workers made by `spawn(file name, release file)`.
    pub fn start_with(tag: &str, n: usize, spawn: impl Fn(&str, &Path) -> Worker) -> Self {
        let base = unique(&format!("ops-{tag}"));
        let release = std::env::temp_dir().join(format!("{base}.release"));
        let mut workers: Vec<Worker> = (0..n)
            .map(|i| spawn(&format!("{base}-{i}.dat"), &release))
            .collect();
        let pids = workers
            .iter_mut()
            .map(|w| w.expect("READY").parse().expect("pid"))
            .collect();
        Workers {
            workers,
            pids,
            release,
        }
    }

    /// Waits until every worker has said `what` (READY: already seen).
    pub fn wait_all(&mut self, what: &str) {
        if what == "READY" {
            return;
        }
        for w in &mut self.workers {
            w.expect(what);
        }
    }

    pub fn kill(&mut self, pid: u32) {
        let i = self.pids.iter().position(|p| *p == pid).expect("pid");
        let mut w = self.workers.remove(i);
        self.pids.remove(i);
        let _ = w.child.kill();
        let _ = w.child.wait();
    }

    /// Lets every worker exit; returns what each reported at exit.
    pub fn release_and_collect(mut self) -> Vec<ProcessStats> {
        std::fs::write(&self.release, b"").expect("release");
        let mut out = Vec::new();
        for w in &mut self.workers {
            let json = w.expect("FINAL");
            out.push(serde_json::from_str(&json).expect("final json"));
            let _ = w.child.wait();
        }
        self.workers.clear();
        let _ = std::fs::remove_file(&self.release);
        out
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        let _ = std::fs::write(&self.release, b"");
        for w in &mut self.workers {
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
        let _ = std::fs::remove_file(&self.release);
    }
}

/// A `dnfs exporter --listen 127.0.0.1:0` of its own (reading the run
/// directory `run_dir`, or the default one), killed when dropped.
pub struct Exporter {
    child: Child,
    /// `127.0.0.1:PORT`, as the exporter said it listens.
    pub addr: String,
    // Kept open for the exporter's life (a closed stderr would fail it).
    _stderr: BufReader<std::process::ChildStderr>,
}

impl Exporter {
    pub fn start(run_dir: Option<&Path>) -> Self {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dnfs"));
        if let Some(d) = run_dir {
            c.env("DIRECTNFS_RUN_DIR", d);
        }
        let mut child = c
            .args(["exporter", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("exporter");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("exporter line");
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .and_then(|a| a.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        Exporter {
            child,
            addr,
            _stderr: stderr,
        }
    }

    /// The body of one scrape of `/metrics`.
    pub fn scrape(&self) -> Option<String> {
        match http_get(&self.addr, "/metrics") {
            Some((200, body)) => Some(body),
            _ => None,
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command running in a detached tmux session of its own, 220 x 60,
/// killed when dropped.
pub struct Tmux {
    tmux: PathBuf,
    pub session: String,
}

impl Tmux {
    /// `None` (after a SKIPPED line) when tmux is missing; see [`tool`].
    pub fn start(command: &str) -> Option<Self> {
        let tmux = directnfs_testkit::server::tool("ops", "tmux")?;
        let session = unique("dnfs-tmux");
        let started = Command::new(&tmux)
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                "220",
                "-y",
                "60",
                command,
            ])
            .status()
            .expect("tmux");
        assert!(started.success(), "tmux new-session {command}");
        Some(Tmux { tmux, session })
    }

    /// The screen as text.
    pub fn capture(&self) -> String {
        let out = Command::new(&self.tmux)
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys`.
    pub fn send(&self, keys: &str) {
        let ok = Command::new(&self.tmux)
            .args(["send-keys", "-t", &self.session, keys])
            .status()
            .expect("send-keys");
        assert!(ok.success());
    }

    /// The session still runs (its command has not exited).
    pub fn alive(&self) -> bool {
        Command::new(&self.tmux)
            .args(["has-session", "-t", &self.session])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new(&self.tmux)
            .args(["kill-session", "-t", &self.session])
            .stderr(Stdio::null())
            .status();
    }
}
