//! Carrying out the fault schedule: `netns.sh` for the paths and the
//! server, the proxy for JUKEBOX.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use directnfs_testkit::proxy::FaultProxy;

use crate::load::Shared;
use crate::schedule::{Event, Fault, FaultCounts};
use crate::topology::Topology;

/// Carries out the schedule (each event not before its time), then makes
/// sure everything is restored.
pub fn inject(
    events: &[Event],
    topo: &Topology,
    proxy: &FaultProxy,
    shared: &Shared,
    counts: &Mutex<FaultCounts>,
) -> Result<(), String> {
    let mut injector = Injector {
        topo,
        proxy,
        share: 0,
        proxied_down: false,
    };
    let mut result = || {
        for e in events {
            while shared.elapsed() < e.at {
                if shared.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                std::thread::sleep((e.at - shared.elapsed()).min(Duration::from_millis(100)));
            }
            if shared.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let t0 = Instant::now();
            injector.apply(e.fault)?;
            counts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .add(e.fault);
            println!(
                "soak: [{:7.1}s] {} ({:.1}s)",
                shared.elapsed().as_secs_f64(),
                e.fault,
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(())
    };
    let result = result();
    // Whatever happened, leave every path healthy and the proxy honest.
    proxy.set_jukebox(0);
    for k in 1..=topo.paths {
        let _ = topo.run(&["restore", &k.to_string()]);
    }
    result
}

/// Carries out faults, and keeps the proxy's JUKEBOX answers on only while
/// its path works: a JUKEBOX comes from the server, so it cannot come back
/// over a cut or black-holed path (the proxy then forwards every call into
/// the fault, as the path would carry it).
struct Injector<'a> {
    topo: &'a Topology,
    proxy: &'a FaultProxy,
    /// The JUKEBOX share of the current burst (0: none).
    share: u32,
    /// The proxy's path is cut or black-holed.
    proxied_down: bool,
}

impl Injector<'_> {
    fn apply(&mut self, fault: Fault) -> Result<(), String> {
        let proxied = self.topo.paths;
        match fault {
            Fault::Cut(k) | Fault::Blackhole(k) => {
                if k == proxied {
                    self.proxied_down = true;
                    self.update_proxy();
                }
                let what = if matches!(fault, Fault::Cut(_)) {
                    "cut"
                } else {
                    "blackhole"
                };
                self.topo.run(&[what, &k.to_string()])?;
            }
            Fault::Restore(k) => {
                self.topo.run(&["restore", &k.to_string()])?;
                if k == proxied {
                    self.proxied_down = false;
                    self.update_proxy();
                }
            }
            Fault::JukeboxOn(per_mille) => {
                self.share = per_mille;
                self.update_proxy();
            }
            Fault::JukeboxOff => {
                self.share = 0;
                self.update_proxy();
            }
            Fault::KillServer { down_secs } => {
                self.topo
                    .run(&["restart-server", "--kill", "--down", &down_secs.to_string()])?;
            }
        }
        Ok(())
    }

    fn update_proxy(&self) {
        let share = if self.proxied_down { 0 } else { self.share };
        self.proxy.set_jukebox(share);
    }
}
