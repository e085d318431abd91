//! What the soak prints while it runs and at the end.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use directnfs_testkit::blocks::BLOCK_SIZE;
use directnfs_testkit::proxy::ProxyCounts;

use crate::load::{self, Shared};
use crate::schedule::FaultCounts;

/// Waits out the load, printing progress every 30 s; a caller stuck for
/// `hang` ends the process (a hang must fail the run, not stall it).
pub fn watch(shared: &Shared, length: Duration, hang: Duration, replay: &str) {
    let mut last_print = Instant::now();
    let mut last_ops = 0;
    while shared.elapsed() < length {
        std::thread::sleep(Duration::from_millis(200));
        if let Some((worker, age)) = shared.oldest_busy() {
            if age >= hang {
                println!(
                    "soak: HANG: worker {worker} has waited {:.0}s for one operation; FAILED; replay with: {replay}",
                    age.as_secs_f64()
                );
                std::process::exit(3);
            }
        }
        if last_print.elapsed() >= Duration::from_secs(30) {
            let ops = shared.ops();
            println!(
                "soak: [{:7.1}s] {} ops ({:.0}/s over the last 30 s), {} caller errors, longest stall so far {:.2}s",
                shared.elapsed().as_secs_f64(),
                ops,
                (ops - last_ops) as f64 / last_print.elapsed().as_secs_f64(),
                shared.error_count.load(Ordering::Relaxed),
                shared.longest().length.as_secs_f64()
            );
            last_ops = ops;
            last_print = Instant::now();
        }
    }
}

/// A client's counters at the end of the load.
#[derive(Debug, Clone, Copy)]
pub struct ClientTotals {
    /// RPC calls.
    pub calls: u64,
    /// Calls sent again.
    pub retransmits: u64,
    /// Calls that waited `timeo` without a reply.
    pub timeouts: u64,
    /// Calls moved to another channel.
    pub failovers: u64,
    /// Channels reconnected.
    pub reconnects: u64,
}

/// The final figures: faults, client counters, throughput, the longest
/// stall, the errors by kind.
pub fn report(
    shared: &Shared,
    secs: f64,
    faults: &FaultCounts,
    proxy: &ProxyCounts,
    clients: &[(&str, Option<ClientTotals>)],
) {
    let reads = shared.reads.load(Ordering::Relaxed);
    let writes = shared.writes.load(Ordering::Relaxed);
    let fsyncs = shared.fsyncs.load(Ordering::Relaxed);
    let mb = (reads + writes) as f64 * BLOCK_SIZE as f64 / 1e6;
    println!(
        "soak: faults injected: {} cuts, {} black-holes, {} restores, {} JUKEBOX bursts \
         ({} calls answered NFS3ERR_JUKEBOX: {} READ, {} WRITE, {} COMMIT), {} server kills",
        faults.cuts,
        faults.blackholes,
        faults.restores,
        faults.jukebox_bursts,
        proxy.jukebox(),
        proxy.jukebox_read,
        proxy.jukebox_write,
        proxy.jukebox_commit,
        faults.kills
    );
    for (name, totals) in clients {
        if let Some(t) = totals {
            println!(
                "soak: {name} client: {} calls, {} retransmits, {} timeouts, {} failovers, {} reconnects",
                t.calls,
                t.retransmits,
                t.timeouts,
                t.failovers,
                t.reconnects
            );
        }
    }
    let longest = shared.longest();
    println!(
        "soak: throughput: {reads} reads, {writes} writes, {fsyncs} fsyncs in {secs:.1}s: {:.0} ops/s, {:.2} MB/s",
        (reads + writes + fsyncs) as f64 / secs,
        mb / secs
    );
    println!(
        "soak: longest caller stall {:.3}s ({} at {:.1}s); {} operations over {:.0}s",
        longest.length.as_secs_f64(),
        if longest.what.is_empty() {
            "-"
        } else {
            &longest.what
        },
        longest.at.as_secs_f64(),
        shared.slow_ops.load(Ordering::Relaxed),
        load::SLOW_OP.as_secs_f64()
    );
    let errors = shared.error_count.load(Ordering::Relaxed);
    println!("soak: errors that reached a caller: {errors}");
    if errors > 0 {
        println!("soak: by kind (count, then the first of the kind):");
        for k in shared.errors_by_kind().iter().take(20) {
            println!("soak:   {:>8} x {}", k.count, k.first);
        }
        println!("soak: the first ones:");
        for e in shared.first_errors() {
            println!("soak:   {e}");
        }
    }
}
