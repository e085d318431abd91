//! `dnfs exporter --listen ADDR`: serves the statistics of every directnfs
//! process of this host (those the exporter's user may read: all of them
//! as root) in the Prometheus text exposition format at `/metrics`.
//!
//! A small HTTP/1.1 server on the standard library: one request per
//! connection, `GET /metrics` (or `HEAD`), anything else 404. Each scrape
//! reads every process's endpoint afresh; nothing is cached.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use directnfs::publish;
use directnfs::stats::render_host_prometheus;

use crate::error::{CliError, Result};

/// Options of `dnfs exporter`.
#[derive(Debug, clap::Args)]
pub struct ExporterArgs {
    // The help is an attribute, not a doc comment: rustdoc would read
    // `[::]` as a link, and clap shows a doc comment's escapes as written.
    #[arg(
        long,
        value_name = "ADDR",
        help = "Address to listen on, e.g. 127.0.0.1:9187 or [::]:9187"
    )]
    pub listen: String,
}

/// How long a scraper may take to send its request or read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// Scrapes served at once; a connection beyond them is answered 503 at
/// once (a scraper retries at its next interval).
const MAX_CONCURRENT: usize = 8;

/// Runs the exporter until killed.
pub fn run(args: &ExporterArgs) -> Result<()> {
    let listener = TcpListener::bind(&args.listen)
        .map_err(|e| CliError::msg(format!("cannot listen on {}: {e}", args.listen)))?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| args.listen.clone(), |a| a.to_string());
    eprintln!("dnfs exporter: serving http://{addr}/metrics");
    accept_forever(&listener);
    Ok(())
}

/// Serves each connection on a thread of its own, at most
/// [`MAX_CONCURRENT`] at once.
fn accept_forever(listener: &TcpListener) {
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(stream) = conn else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        use std::sync::atomic::Ordering::AcqRel;
        if busy.fetch_add(1, AcqRel) >= MAX_CONCURRENT {
            busy.fetch_sub(1, AcqRel);
            let mut s = stream;
            let _ = respond(
                &mut s,
                "503 Service Unavailable",
                "text/plain",
                b"busy\n",
                false,
            );
            continue;
        }
        let busy = std::sync::Arc::clone(&busy);
        let spawned = std::thread::Builder::new()
            .name("dnfs-scrape".into())
            .spawn(move || {
                let _ = serve(stream);
                busy.fetch_sub(1, AcqRel);
            });
        if spawned.is_err() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Answers one connection.
fn serve(mut stream: TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let (method, target) = match read_head(&stream)? {
        Some(v) => v,
        None => {
            respond(
                &mut stream,
                "400 Bad Request",
                "text/plain",
                b"bad request\n",
                false,
            )?;
            // Closing with unread bytes would reset the connection before
            // the client reads the answer: read (a bounded amount of) the
            // rest first.
            stream.shutdown(std::net::Shutdown::Write)?;
            stream.set_read_timeout(Some(Duration::from_millis(200)))?;
            let _ = io::copy(&mut io::Read::take(&stream, 1 << 20), &mut io::sink());
            return Ok(());
        }
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET /metrics\n",
            false,
        );
    }
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/metrics" => {
            let start = Instant::now();
            let host = publish::read_host(None);
            let mut body = render_host_prometheus(&host);
            body.push_str(&self_metrics(
                host.processes.len(),
                host.unreadable.len(),
                start.elapsed(),
            ));
            respond(
                &mut stream,
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                body.as_bytes(),
                head_only,
            )
        }
        "/" => respond(
            &mut stream,
            "200 OK",
            "text/plain; charset=utf-8",
            b"directnfs exporter: metrics at /metrics\n",
            head_only,
        ),
        _ => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found\n",
            head_only,
        ),
    }
}

/// The exporter's own gauges: processes read, endpoints refused, time taken.
fn self_metrics(processes: usize, unreadable: usize, took: Duration) -> String {
    format!(
        "# HELP directnfs_exporter_processes directnfs processes read in this scrape.\n\
         # TYPE directnfs_exporter_processes gauge\n\
         directnfs_exporter_processes {processes}\n\
         # HELP directnfs_exporter_unreadable_processes Endpoints found but not read (another user, a process exiting).\n\
         # TYPE directnfs_exporter_unreadable_processes gauge\n\
         directnfs_exporter_unreadable_processes {unreadable}\n\
         # HELP directnfs_exporter_scrape_duration_seconds Time taken to read every process.\n\
         # TYPE directnfs_exporter_scrape_duration_seconds gauge\n\
         directnfs_exporter_scrape_duration_seconds {}\n",
        took.as_secs_f64()
    )
}

/// Reads the request line and headers; `(method, target)`, or `None` when
/// the request is malformed or too long.
fn read_head(stream: &TcpStream) -> io::Result<Option<(String, String)>> {
    let mut reader = BufReader::new(io::Read::take(stream, MAX_HEAD as u64));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (method, target) = (method.to_owned(), target.to_owned());
    // Headers: read to the blank line (we need none of them).
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        if h == "\r\n" || h == "\n" {
            return Ok(Some((method, target)));
        }
    }
}

fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Sends `request` to a fresh `serve` and returns the whole answer.
    fn ask(request: &[u8]) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().expect("accept");
            let _ = serve(s);
        });
        let mut c = TcpStream::connect(addr).expect("connect");
        c.write_all(request).expect("send");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let mut out = String::new();
        c.read_to_string(&mut out).expect("read");
        server.join().expect("server");
        out
    }

    #[test]
    fn metrics_are_served_as_prometheus_text() {
        let r = ask(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4"), "{r}");
        assert!(
            r.contains("# TYPE directnfs_exporter_processes gauge"),
            "{r}"
        );
        let head = ask(b"HEAD /metrics HTTP/1.0\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
    }

    #[test]
    fn a_scrape_beyond_the_eighth_at_once_is_answered_503() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Runs until the test process ends.
        std::thread::spawn(move || accept_forever(&listener));
        // Eight scrapers that connect and say nothing hold every slot
        // (each is waited for up to CLIENT_TIMEOUT).
        let idle: Vec<TcpStream> = (0..MAX_CONCURRENT)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let until = Instant::now() + Duration::from_secs(5);
        let answer = loop {
            // Nothing sent: the 503 comes without reading a request (and
            // a request left unread could reset the connection).
            let mut c = TcpStream::connect(addr).expect("connect");
            c.set_read_timeout(Some(Duration::from_millis(300)))
                .expect("timeout");
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            // The idle ones may not all be accepted yet: ask again.
            if out.starts_with("HTTP/1.1 503") || Instant::now() > until {
                break out;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        drop(idle);
        // Their slots come back: a scrape is served again.
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let mut c = TcpStream::connect(addr).expect("connect");
            c.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("send");
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            if out.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < until, "never served again: {out}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn other_paths_methods_and_garbage_get_errors_not_panics() {
        assert!(ask(b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(ask(b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(ask(b"\r\n\r\n").starts_with("HTTP/1.1 400"));
        // A request head that never ends (cut at the size bound).
        let endless = [b"GET /metrics HTTP/1.1\r\nX: ".as_slice(), &[b'a'; 40_000]].concat();
        assert!(ask(&endless).starts_with("HTTP/1.1 400"));
    }
}
