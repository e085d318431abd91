//! `dnfs run [--config FILE] -- COMMAND ARGS...`: runs COMMAND with the
//! interception library (`libdirectnfs_preload.so`, next to this binary)
//! preloaded and the dnfstab named in `$DIRECTNFS_TAB`, so that COMMAND
//! and every program it starts (they inherit both variables) read and
//! write the files under the dnfstab's `mount:` prefixes over directnfs.
//!
//! `dnfs` replaces itself with COMMAND (`exec`): the exit status, signals
//! and process id are COMMAND's.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use directnfs::config::{find_config, DnfsTab};

use crate::error::{CliError, Result};

/// Environment variable naming the library to preload instead of the one
/// next to the `dnfs` binary.
pub const ENV_LIBRARY: &str = "DIRECTNFS_PRELOAD";
/// File name of the interception library.
pub const LIBRARY: &str = "libdirectnfs_preload.so";

/// Exit status when COMMAND could not be started (as shells use).
pub const CANNOT_RUN: i32 = 127;

/// Runs `command`; returns only if it could not be started, with the exit
/// status to use: 1 for a problem of the dnfstab or the library,
/// [`CANNOT_RUN`] when COMMAND itself could not be executed.
pub fn exec(config: Option<&Path>, command: &[OsString]) -> (i32, CliError) {
    match prepare(config, command) {
        Ok(mut cmd) => {
            let err = cmd.exec();
            let program = command.first().map(|p| p.to_string_lossy().into_owned());
            (
                CANNOT_RUN,
                CliError::Msg(format!(
                    "run: cannot run {}: {err}",
                    program.unwrap_or_default()
                )),
            )
        }
        Err(e) => (1, e),
    }
}

/// The command with its environment.
fn prepare(config: Option<&Path>, command: &[OsString]) -> Result<std::process::Command> {
    let Some((program, args)) = command.split_first() else {
        return Err(CliError::Msg(
            "run: no command given (dnfs run -- COMMAND ARGS...)".into(),
        ));
    };
    let tab = find_config(config)
        .map_err(CliError::Config)?
        .ok_or_else(|| {
            CliError::Msg(
                "run: no dnfstab (use --config FILE, $DIRECTNFS_TAB, ./dnfstab or /etc/dnfstab)"
                    .into(),
            )
        })?;
    check_mounts(&tab)?;
    let tab_path = absolute(&tab.source)?;
    let library = library()?;
    let preload = preload_list(&library, std::env::var_os("LD_PRELOAD").as_deref());
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env("LD_PRELOAD", preload)
        .env(directnfs::config::ENV_VAR, &tab_path);
    Ok(cmd)
}

/// A dnfstab without a single `mount:` prefix would preload the library
/// for nothing: said now rather than silently.
fn check_mounts(tab: &DnfsTab) -> Result<()> {
    let mounts = tab.servers.iter().map(|s| s.exports.len()).sum::<usize>();
    if mounts == 0 {
        return Err(CliError::Msg(format!(
            "run: {} has no export: ... mount: ... line; nothing would be served",
            tab.source.display()
        )));
    }
    Ok(())
}

/// The library: `$DIRECTNFS_PRELOAD`, else next to this binary (a cargo
/// build), else in the library directory beside its `bin/` (an installed
/// package: `/usr/bin/dnfs` and `/usr/lib/x86_64-linux-gnu/`).
fn library() -> Result<PathBuf> {
    let path = match std::env::var_os(ENV_LIBRARY) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let exe = std::env::current_exe()
                .map_err(|e| CliError::Msg(format!("run: cannot find the dnfs binary: {e}")))?;
            let candidates = library_candidates(&exe);
            candidates
                .iter()
                .find(|p| p.is_file())
                .unwrap_or(&candidates[0])
                .clone()
        }
    };
    if !path.is_file() {
        return Err(CliError::Msg(format!(
            "run: {} not found (build it with cargo build --release, or set ${ENV_LIBRARY})",
            path.display()
        )));
    }
    absolute(&path)
}

/// Where the library may be for the binary `exe`, in order.
fn library_candidates(exe: &Path) -> Vec<PathBuf> {
    let mut out = vec![exe.with_file_name(LIBRARY)];
    if let Some(prefix) = exe.parent().and_then(Path::parent) {
        let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
        out.push(prefix.join("lib").join(multiarch).join(LIBRARY));
        out.push(prefix.join("lib").join(LIBRARY));
    }
    out
}

/// `LD_PRELOAD` with the library first, other preloaded libraries kept.
fn preload_list(library: &Path, existing: Option<&OsStr>) -> OsString {
    let mut out = OsString::from(library);
    let Some(existing) = existing else {
        return out;
    };
    let existing = existing.to_string_lossy();
    for other in existing.split([':', ' ']).filter(|s| !s.is_empty()) {
        if Path::new(other) != library {
            out.push(":");
            out.push(other);
        }
    }
    out
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|e| CliError::io(p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_dnfs_finds_the_library_in_the_multiarch_directory() {
        let c = library_candidates(Path::new("/usr/bin/dnfs"));
        assert_eq!(c[0], Path::new("/usr/bin/libdirectnfs_preload.so"));
        assert_eq!(
            c[1],
            Path::new(&format!(
                "/usr/lib/{}-linux-gnu/libdirectnfs_preload.so",
                std::env::consts::ARCH
            ))
        );
        assert_eq!(c[2], Path::new("/usr/lib/libdirectnfs_preload.so"));
    }

    #[test]
    fn the_library_goes_first_and_others_are_kept_once() {
        let lib = Path::new("/x/libdirectnfs_preload.so");
        assert_eq!(
            preload_list(lib, None),
            OsString::from("/x/libdirectnfs_preload.so")
        );
        assert_eq!(
            preload_list(
                lib,
                Some(OsStr::new("/a.so:/x/libdirectnfs_preload.so /b.so"))
            ),
            OsString::from("/x/libdirectnfs_preload.so:/a.so:/b.so")
        );
    }

    #[test]
    fn a_dnfstab_without_mounts_is_refused() {
        let tab =
            directnfs::config::parse_str("server: s\npath: 127.0.0.1\n", Path::new("t")).unwrap();
        assert!(check_mounts(&tab).is_err());
    }
}
