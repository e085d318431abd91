//! Client cost per I/O, for `valgrind --tool=callgrind` (instruction
//! counts are repeatable on a busy machine, timings are not). Modes, after
//! N:
//!
//! * none: N rounds of one 8 KiB write and one 8 KiB read of a 512 KiB
//!   file, one at a time, through `write_at`/`read_at`;
//! * `batch1`: the same through one reused `Batch` (`write_owned`/
//!   `read_owned`, each waited for before the next): the batch path's own
//!   cost;
//! * `batch`: N rounds of one `Batch` of 16 writes and 16 reads of
//!   distinct 8 KiB blocks, all in flight together.
//!
//! Run it with N and 2N rounds; the difference in instructions divided by
//! the difference in I/Os (printed) is the marginal cost of one I/O
//! (mount and set-up cancel out):
//!
//! ```sh
//! for n in 500 1000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/io_cost.$n \
//!     target/release/examples/io_cost "nfs://127.0.0.1/export?vers=4.1&nfsport=2049" $n
//! done   # "Collected : ..." per run
//! ```

/// Writes and reads in one round of the `batch` mode.
const BATCH_HALF: u64 = 16;

/// How the I/Os are issued.
enum Mode {
    OneAtATime,
    BatchOneAtATime,
    Batch,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(rounds)) = (args.next(), args.next()) else {
        return Err("usage: io_cost URL ROUNDS [batch1|batch]".into());
    };
    let rounds: u64 = rounds.parse()?;
    let mode = match args.next().as_deref() {
        None => Mode::OneAtATime,
        Some("batch1") => Mode::BatchOneAtATime,
        Some("batch") => Mode::Batch,
        Some(other) => {
            return Err(format!("io_cost: unknown mode {other:?} (batch1, batch)").into())
        }
    };
    let client = directnfs::Client::connect(&url)?;
    let path = format!("/io_cost-{}.dat", std::process::id());
    let file = client.create(&path)?;
    let ios = match mode {
        Mode::OneAtATime => {
            let mut block = vec![7u8; 8192];
            for i in 0..rounds {
                let offset = (i % 64) * 8192;
                file.write_at(&block, offset)?;
                file.read_at(&mut block, offset)?;
            }
            2 * rounds
        }
        Mode::BatchOneAtATime => batch_one_at_a_time(&client, &file, rounds)?,
        Mode::Batch => batch_rounds(&client, &file, rounds)?,
    };
    drop(file);
    client.remove(&path)?;
    eprintln!("{ios} I/Os");
    Ok(())
}

/// `rounds` of one write and one read through a reused `Batch`, each
/// waited for before the next: I/Os done.
fn batch_one_at_a_time(
    client: &directnfs::Client,
    file: &directnfs::File,
    rounds: u64,
) -> Result<u64, Box<dyn std::error::Error>> {
    let mut block = vec![7u8; 8192];
    let mut batch = directnfs::Batch::new(client);
    let mut done = Vec::with_capacity(1);
    for i in 0..rounds {
        let offset = (i % 64) * 8192;
        for write in [true, false] {
            let buf = std::mem::take(&mut block);
            if write {
                batch.write_owned(file, offset, buf, i)?;
            } else {
                batch.read_owned(file, offset, buf, i)?;
            }
            batch.wait_into(&mut done, 1, None);
            for c in done.drain(..) {
                c.result?;
                block = c.buffer.ok_or("io_cost: the batch kept the buffer")?;
            }
        }
    }
    Ok(2 * rounds)
}

/// `rounds` batches of `BATCH_HALF` writes (blocks 0..16) and as many
/// reads (blocks 16..32, written first), owned buffers reused: I/Os done.
fn batch_rounds(
    client: &directnfs::Client,
    file: &directnfs::File,
    rounds: u64,
) -> Result<u64, Box<dyn std::error::Error>> {
    file.write_at(&vec![3u8; (2 * BATCH_HALF * 8192) as usize], 0)?;
    let mut batch = directnfs::Batch::new(client);
    let mut free: Vec<Vec<u8>> = (0..2 * BATCH_HALF).map(|_| vec![7u8; 8192]).collect();
    let mut done = Vec::new();
    for _ in 0..rounds {
        for i in 0..2 * BATCH_HALF {
            let buf = free.pop().ok_or("io_cost: a buffer was not handed back")?;
            if i < BATCH_HALF {
                batch.write_owned(file, i * 8192, buf, i)?;
            } else {
                batch.read_owned(file, i * 8192, buf, i)?;
            }
        }
        while batch.outstanding() > 0 {
            batch.wait_into(&mut done, batch.outstanding(), None);
        }
        for c in done.drain(..) {
            if c.result? != 8192 {
                return Err(format!("io_cost: token {} was short", c.token).into());
            }
            free.extend(c.buffer);
        }
    }
    Ok(2 * BATCH_HALF * rounds)
}
