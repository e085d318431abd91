//! Client cost per I/O, for `valgrind --tool=callgrind` (instruction
//! counts are repeatable on a busy machine, timings are not): N rounds of
//! one 8 KiB write and one 8 KiB read of a 512 KiB file, one at a time —
//! through `write_at`/`read_at`, or with `batch` as third argument through
//! one reused `Batch` (`write_owned`/`read_owned`, each waited for). Run it
//! with N and 2N rounds; the difference in instructions divided by 2N is
//! the marginal cost of one I/O (mount and set-up cancel out):
//!
//! ```sh
//! for n in 500 1000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/io_cost.$n \
//!     target/release/examples/io_cost "nfs://127.0.0.1/export?vers=4.1&nfsport=2049" $n
//! done   # "Collected : ..." per run
//! ```

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(rounds)) = (args.next(), args.next()) else {
        return Err("usage: io_cost URL ROUNDS [batch]".into());
    };
    let rounds: u64 = rounds.parse()?;
    let batched = match args.next().as_deref() {
        None => false,
        Some("batch") => true,
        Some(other) => return Err(format!("io_cost: unknown mode {other:?}").into()),
    };
    let client = directnfs::Client::connect(&url)?;
    let path = format!("/io_cost-{}.dat", std::process::id());
    let file = client.create(&path)?;
    let mut block = vec![7u8; 8192];
    let mut batch = directnfs::Batch::new(&client);
    let mut done = Vec::with_capacity(1);
    for i in 0..rounds {
        let offset = (i % 64) * 8192;
        if batched {
            for write in [true, false] {
                let buf = std::mem::take(&mut block);
                if write {
                    batch.write_owned(&file, offset, buf, i)?;
                } else {
                    batch.read_owned(&file, offset, buf, i)?;
                }
                batch.wait_into(&mut done, 1, None);
                for c in done.drain(..) {
                    c.result?;
                    block = c.buffer.ok_or("io_cost: the batch kept the buffer")?;
                }
            }
        } else {
            file.write_at(&block, offset)?;
            file.read_at(&mut block, offset)?;
        }
    }
    drop(batch);
    drop(file);
    client.remove(&path)?;
    eprintln!("{} I/Os", 2 * rounds);
    Ok(())
}
