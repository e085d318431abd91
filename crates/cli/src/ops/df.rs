//! `dnfs df PATH...`: space and file slots of the file systems holding the
//! given NFS paths (FSSTAT), like `df`.

use std::io::Write;

use directnfs::FsStat;

use crate::error::{CliError, Result};
use crate::location::Resolver;

/// Prints one line per PATH: server:export, size, used, available, use%,
/// files, files used, files free. Sizes in bytes with `--bytes`, else
/// human-readable (powers of 1024).
pub fn run(resolver: &Resolver, args: &[String], bytes: bool) -> Result<()> {
    let mut rows = vec![[
        "Filesystem",
        "Size",
        "Used",
        "Avail",
        "Use%",
        "Files",
        "IUsed",
        "IFree",
        "Path",
    ]
    .map(str::to_owned)];
    for arg in args {
        let (client, _) = resolver.nfs(arg, "df")?;
        let fs = client.fsstat()?;
        rows.push(row(
            &format!("{}:{}", client.server_name(), client.export()),
            &fs,
            arg,
            bytes,
        ));
    }
    let widths: Vec<usize> = (0..9)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            if i == 0 || i == 8 {
                line.push_str(&format!("{cell:<w$}"));
            } else {
                line.push_str(&format!("{cell:>w$}"));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(CliError::stdout)
}

fn row(fs_name: &str, fs: &FsStat, arg: &str, bytes: bool) -> [String; 9] {
    let size = |n: u64| if bytes { n.to_string() } else { human(n) };
    let used = fs.total_bytes.saturating_sub(fs.free_bytes);
    // As df: used / (used + available), rounded up.
    let denom = used.saturating_add(fs.avail_bytes);
    let pct = if denom == 0 {
        "-".to_owned()
    } else {
        format!("{}%", (used as u128 * 100).div_ceil(denom as u128))
    };
    [
        fs_name.to_owned(),
        size(fs.total_bytes),
        size(used),
        size(fs.avail_bytes),
        pct,
        fs.total_files.to_string(),
        fs.total_files.saturating_sub(fs.free_files).to_string(),
        fs.free_files.to_string(),
        arg.to_owned(),
    ]
}

/// `512`, `8.0K`, `1.5G` (powers of 1024, as `df -h`).
fn human(n: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if n < 1024 {
        return n.to_string();
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_shows_used_and_percent_as_df_does() {
        let fs = FsStat {
            total_bytes: 100 << 30,
            free_bytes: 40 << 30,
            avail_bytes: 35 << 30,
            total_files: 1000,
            free_files: 900,
            avail_files: 900,
        };
        let r = row("f:/e", &fs, "nfs://f/e", false);
        assert_eq!(&r[1..5], ["100.0G", "60.0G", "35.0G", "64%"]);
        assert_eq!(&r[5..8], ["1000", "100", "900"]);
        let r = row("f:/e", &fs, "x", true);
        assert_eq!(r[1], (100u64 << 30).to_string());
    }
}
