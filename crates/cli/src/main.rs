//! `dnfs`: file commands over directnfs, with no kernel NFS client.
//!
//! A PATH is an `nfs://host[:port]/export/path?options` URL or a path under
//! a `mount:` prefix of the dnfstab (found with `--config FILE`,
//! `$DIRECTNFS_TAB`, `./dnfstab`, `/etc/dnfstab`); `cp` also takes local
//! paths. Errors are one line on stderr, `dnfs: <message>`, with exit code 1
//! (2 for usage errors).

mod alloc;
mod bench;
mod check;
mod commands;
mod error;
mod format;
mod location;
mod ops;
mod progress;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{CliError, Result};
use crate::location::Resolver;

#[derive(Debug, Parser)]
#[command(
    name = "dnfs",
    version,
    about = "NFSv3 and NFSv4.1 file commands over directnfs (no kernel NFS client, no mount)",
    after_help = "PATH is an nfs://host[:port]/export/path?nfsport=N&mountport=M URL, or a path \
                  under a mount: prefix of the dnfstab (--config FILE, $DIRECTNFS_TAB, \
                  ./dnfstab, /etc/dnfstab). cp also takes local paths."
)]
struct Cli {
    /// dnfstab to use instead of the default lookup.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Say what is resolved and mounted, and how fast cp went (stderr).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// After the command, print each mounted client's statistics (calls,
    /// bytes, latency per server, path, channel and file) on stderr.
    #[arg(long, global = true)]
    stats: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List a directory (names sorted, one per line), or name a file.
    Ls {
        /// Directory or file.
        path: String,
        /// Long format: type and mode, uid, gid, size in bytes, mtime (UTC), name.
        #[arg(short = 'l')]
        long: bool,
    },
    /// Show every attribute of a file or directory.
    Stat {
        /// File or directory.
        path: String,
    },
    /// Write a file's content to stdout.
    Cat {
        /// File.
        path: String,
    },
    /// Copy a file: local→NFS, NFS→local or NFS→NFS, in parallel.
    ///
    /// If DST is an existing directory the file is copied into it under its
    /// own name. An NFS destination is written UNSTABLE (unless its URL sets
    /// stable=) and committed at the end: cp returns once the data is durable.
    Cp {
        /// Source file.
        src: String,
        /// Destination file or directory.
        dst: String,
        /// Parallel workers, each moving one chunk at a time [default: 2 to
        /// an NFS destination, 8 to a local one].
        #[arg(short, long, value_parser = clap::value_parser!(u16).range(1..=256))]
        jobs: Option<u16>,
        /// Bytes per chunk, K/M suffixes [default: 1M to an NFS destination,
        /// 2M to a local one]; jobs x chunk is the data in flight.
        #[arg(long, value_name = "SIZE", value_parser = commands::cp::parse_size)]
        chunk: Option<usize>,
    },
    /// Remove a file (or a directory tree with -r).
    Rm {
        /// File (or directory with -r).
        path: String,
        /// Remove directories and their contents.
        #[arg(short, long)]
        recursive: bool,
        /// A missing PATH is not an error.
        #[arg(short, long)]
        force: bool,
    },
    /// Create a directory.
    Mkdir {
        /// Directory to create.
        path: String,
        /// Create missing parents; an existing directory is not an error.
        #[arg(short, long)]
        parents: bool,
    },
    /// Rename within one export of one server (an NFS RENAME).
    Mv {
        /// Existing file or directory.
        src: String,
        /// New name, or an existing directory to move into.
        dst: String,
    },
    /// Database I/O benchmark (oltp, scan, redo, sweep): directnfs vs libnfs vs local.
    Bench(bench::BenchArgs),
    /// Run a program with its files under the dnfstab's mount: prefixes on
    /// NFS: the interception library is preloaded and the dnfstab passed on
    /// (children inherit both).
    Run {
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Check every server, path and export of the dnfstab (or the URLs
    /// given): connect over each path, MOUNT, FSINFO, NULL round trip
    /// (NFSv4.1: session, export lookup, SEQUENCE round trip), protocol
    /// and session slots. Exits non-zero if anything fails.
    Check {
        /// nfs:// URLs to check instead of the dnfstab.
        urls: Vec<String>,
    },
    /// Live statistics of every directnfs process of this host: the
    /// v$dnfs_servers, v$dnfs_channels, v$dnfs_files and v$dnfs_stats views,
    /// latency per class and path, the latest alert-log lines.
    ///
    /// Each process publishes its statistics on a local socket readable by
    /// its own user and root only (see `DIRECTNFS_RUN_DIR`); nothing is sent
    /// over the network. Without --pid the processes are summed.
    Stats(ops::stats::StatsArgs),
    /// Live terminal view of every directnfs process: per server, path and
    /// busiest file, IOPS, MB/s, mean and p99 latency, in flight, errors.
    /// q quits.
    Top(ops::top::TopArgs),
    /// Serve every local directnfs process's statistics to Prometheus
    /// (text exposition at http://ADDR/metrics).
    Exporter(ops::exporter::ExporterArgs),
    /// Remove the NFSv3 lock file of a SQLite database (opened through the
    /// directnfs VFS) whose holder is gone: a process of this host that no
    /// longer runs, or one of the host named by --host-gone, which you
    /// know is down for good. A holder alive on this host, or on another
    /// host not named, is never removed: the lock's owner is printed.
    SqliteUnlock {
        /// The database (the lock file is DB.dnfs-lock beside it).
        db: String,
        /// The host of the lock's owner is down for good (its name as the
        /// lock file records it): its lock may be removed.
        #[arg(long, value_name = "HOST")]
        host_gone: Option<String>,
    },
    /// Space and file slots of the file systems holding PATHs (FSSTAT).
    Df {
        /// NFS paths.
        #[arg(required = true)]
        paths: Vec<String>,
        /// Sizes in bytes instead of K/M/G.
        #[arg(long)]
        bytes: bool,
    },
    /// Write man pages or shell completions generated from this command
    /// line (used to build the package), or the book's table of mount
    /// options.
    #[command(hide = true)]
    Generate {
        #[command(subcommand)]
        what: Generate,
    },
}

#[derive(Debug, Subcommand)]
enum Generate {
    /// Man pages (dnfs.1, dnfs-COMMAND.1) into DIR.
    Man {
        /// Output directory.
        dir: PathBuf,
    },
    /// The completion script of SHELL into DIR.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
        /// Output directory.
        dir: PathBuf,
    },
    /// The book's options page (docs/book/src/options.md) into FILE.
    Options {
        /// Output file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("dnfs: internal error: {}{at}", one_line(&msg));
    }));
    let cli = Cli::parse();
    if let Command::Bench(args) = cli.command {
        return bench::run(args, cli.config);
    }
    if let Some(result) = run_ops(&cli.command) {
        return match result {
            Ok(()) | Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dnfs: {}", one_line(&e.to_string()));
                ExitCode::FAILURE
            }
        };
    }
    if matches!(cli.command, Command::Cp { .. } | Command::Cat { .. }) {
        alloc::tune_for_bulk_io();
    }
    if let Command::Run { command } = &cli.command {
        let (code, e) = commands::run::exec(cli.config.as_deref(), command);
        eprintln!("dnfs: {}", one_line(&e.to_string()));
        std::process::exit(code)
    }
    if let Command::Check { urls } = &cli.command {
        let code = match check::run(cli.config.as_deref(), urls) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                eprintln!("dnfs: {}", one_line(&e.to_string()));
                1
            }
        };
        std::process::exit(code)
    }
    let resolver = Resolver::new(cli.config, cli.verbose);
    let result = run(&resolver, cli.command);
    if cli.stats {
        for client in resolver.mounted() {
            eprint!("{}", directnfs::stats::render_text(&client.stats()));
        }
    }
    let code = match result {
        Ok(()) | Err(CliError::BrokenPipe) => 0,
        Err(e) => {
            eprintln!("dnfs: {}", one_line(&e.to_string()));
            1
        }
    };
    // Exit without dropping the mounted clients (see `Resolver`): every
    // command has already flushed its output and committed its writes.
    std::process::exit(code)
}

fn run(resolver: &Resolver, command: Command) -> Result<()> {
    match command {
        Command::Ls { path, long } => commands::ls::run(resolver, &path, long),
        Command::Stat { path } => commands::stat::run(resolver, &path),
        Command::Cat { path } => commands::cat::run(resolver, &path),
        Command::Cp {
            src,
            dst,
            jobs,
            chunk,
        } => commands::cp::run(
            resolver,
            &src,
            &dst,
            commands::cp::Tuning {
                jobs: jobs.map(usize::from),
                chunk,
            },
        ),
        Command::Rm {
            path,
            recursive,
            force,
        } => commands::namespace::rm(resolver, &path, recursive, force),
        Command::Mkdir { path, parents } => commands::namespace::mkdir(resolver, &path, parents),
        Command::Mv { src, dst } => commands::namespace::mv(resolver, &src, &dst),
        Command::Df { paths, bytes } => ops::df::run(resolver, &paths, bytes),
        Command::SqliteUnlock { db, host_gone } => {
            let (client, path) = resolver.nfs(&db, "sqlite-unlock")?;
            let done = directnfs_sqlite::unlock::unlock(&client, &path, host_gone.as_deref())
                .map_err(|why| CliError::msg(format!("sqlite-unlock {db}: {why}")))?;
            use std::io::Write as _;
            writeln!(std::io::stdout(), "{done}").map_err(CliError::stdout)
        }
        // Handled in main (they have their own exit codes, or mount nothing).
        Command::Bench(_)
        | Command::Check { .. }
        | Command::Run { .. }
        | Command::Stats(_)
        | Command::Top(_)
        | Command::Exporter(_)
        | Command::Generate { .. } => Ok(()),
    }
}

/// The commands that read other processes' statistics or write files
/// about the command line, mounting nothing; `None` for the others.
fn run_ops(command: &Command) -> Option<Result<()>> {
    Some(match command {
        Command::Stats(args) => ops::stats::run(args),
        Command::Top(args) => ops::top::run(args),
        Command::Exporter(args) => ops::exporter::run(args),
        Command::Generate { what } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            match what {
                Generate::Man { dir } => ops::generate::man(&cmd, dir),
                Generate::Completions { shell, dir } => {
                    ops::generate::completions(&mut cmd, *shell, dir)
                }
                Generate::Options { file } => ops::generate::options(file),
            }
        }
        _ => return None,
    })
}

/// Messages are one line: embedded newlines become `; `.
fn one_line(s: &str) -> String {
    s.trim_end()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn messages_are_folded_to_one_line() {
        assert_eq!(one_line("a\n  b\n\nc\n"), "a; b; c");
    }
}
