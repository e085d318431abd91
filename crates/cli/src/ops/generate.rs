//! `dnfs generate man DIR` / `dnfs generate completions SHELL DIR`: man
//! pages and shell completions made from the command-line definition
//! itself, so they never disagree with it (the Debian package ships them).
//! `dnfs generate options FILE`: the book's options page, made from the
//! client's option table (`directnfs::config::reference`); a test fails
//! when the book's copy differs.

use std::path::Path;

use clap::Command;
use clap_complete::Shell;

use crate::error::{CliError, Result};

/// Writes `dnfs.1` and one `dnfs-COMMAND.1` per subcommand into `dir`.
pub fn man(cmd: &Command, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir, e))?;
    write_page(cmd, "dnfs", dir)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("dnfs-{}", sub.get_name());
        let sub = sub.clone().name(name.clone());
        write_page(&sub, &name, dir)?;
    }
    Ok(())
}

fn write_page(cmd: &Command, name: &str, dir: &Path) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .map_err(|e| CliError::io(&path, e))?;
    std::fs::write(&path, buf).map_err(|e| CliError::io(&path, e))
}

/// Writes the completion script for `shell` into `dir`, under the name
/// that shell's completion directory expects (`dnfs` for bash, `_dnfs`
/// for zsh, `dnfs.fish` for fish).
pub fn completions(cmd: &mut Command, shell: Shell, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::io(dir, e))?;
    clap_complete::generate_to(shell, cmd, "dnfs", dir)
        .map(|_| ())
        .map_err(|e| CliError::io(dir, e))
}

/// The book's options page: a title, where the keys are written, and
/// [`directnfs::config::reference::markdown`]'s table.
pub fn options_page() -> String {
    format!(
        "# Options\n\n\
         Every key of a URL query (`?key=value&...`) and of a dnfstab server block (`key: value`;\n\
         flags stand alone). Keys are case-insensitive and `-` is the same as `_`. A kernel\n\
         mount-option string is taken by the `options` key.\n\n\
         This page is written by `dnfs generate options docs/book/src/options.md` from the table in\n\
         `crates/client/src/config/reference.rs`; `crates/cli/tests/generate.rs` fails when they\n\
         differ.\n\n{}",
        directnfs::config::reference::markdown()
    )
}

/// Writes [`options_page`] into `file`.
pub fn options(file: &Path) -> Result<()> {
    std::fs::write(file, options_page()).map_err(|e| CliError::io(file, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("dnfs-gen-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn man_pages_cover_every_visible_command() {
        let cmd = Command::new("dnfs")
            .about("x")
            .subcommand(Command::new("stats").about("live statistics"))
            .subcommand(Command::new("secret").hide(true));
        let d = scratch("man");
        man(&cmd, &d).expect("written");
        let page = std::fs::read_to_string(d.join("dnfs-stats.1")).expect("page");
        assert!(page.contains(".TH dnfs-stats"), "{page}");
        assert!(!d.join("dnfs-secret.1").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn completions_are_written_under_each_shells_name() {
        let mut cmd = Command::new("dnfs").subcommand(Command::new("top"));
        let d = scratch("comp");
        for (shell, file) in [
            (Shell::Bash, "dnfs.bash"),
            (Shell::Zsh, "_dnfs"),
            (Shell::Fish, "dnfs.fish"),
        ] {
            completions(&mut cmd, shell, &d).expect("written");
            let text = std::fs::read_to_string(d.join(file)).expect(file);
            assert!(text.contains("top"), "{file}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
