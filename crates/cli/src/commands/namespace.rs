//! Namespace commands: `rm`, `mkdir`, `mv`.

use directnfs::Client;

use crate::error::{CliError, Result};
use crate::location::{is_not_found, nfs_file_name, nfs_join, Location, Resolver, Spec};

/// `dnfs rm [-r] [-f] PATH`.
pub fn rm(resolver: &Resolver, arg: &str, recursive: bool, force: bool) -> Result<()> {
    let (client, path) = resolver.nfs(arg, "rm")?;
    if nfs_file_name(&path).is_none() {
        return Err(CliError::msg(format!(
            "rm: {arg}: refusing to remove the root of export {}",
            client.export()
        )));
    }
    let meta = match client.metadata(&path) {
        Err(e) if force && is_not_found(&e) => return Ok(()),
        r => r?,
    };
    if !meta.is_dir() {
        return Ok(client.remove(&path)?);
    }
    if !recursive {
        return Err(CliError::msg(format!(
            "rm: {arg}: is a directory (use rm -r)"
        )));
    }
    remove_tree(&client, &path)
}

/// Removes `dir` and everything below it, depth first.
fn remove_tree(client: &Client, dir: &str) -> Result<()> {
    for entry in client.read_dir(dir)? {
        let path = nfs_join(dir, &entry.name);
        let is_dir = match entry.metadata {
            Some(m) => m.is_dir(),
            None => client.metadata(&path)?.is_dir(),
        };
        if is_dir {
            remove_tree(client, &path)?;
        } else {
            client.remove(&path)?;
        }
    }
    Ok(client.rmdir(dir)?)
}

/// `dnfs mkdir [-p] PATH`.
pub fn mkdir(resolver: &Resolver, arg: &str, parents: bool) -> Result<()> {
    let (client, path) = resolver.nfs(arg, "mkdir")?;
    if !parents {
        return Ok(client.mkdir(&path)?);
    }
    let mut sofar = String::new();
    for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
        sofar = nfs_join(if sofar.is_empty() { "/" } else { &sofar }, comp);
        match client.metadata(&sofar) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => {
                return Err(CliError::msg(format!(
                    "mkdir: {sofar}: exists and is not a directory"
                )))
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        if let Err(e) = client.mkdir(&sofar) {
            // Someone else may have created it in between: fine if a directory.
            if !client.metadata(&sofar).is_ok_and(|m| m.is_dir()) {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// `dnfs mv SRC DST`: one RENAME on the server; both must be in the same
/// export of the same server. A DST that is a directory receives SRC under
/// its own name.
pub fn mv(resolver: &Resolver, src: &str, dst: &str) -> Result<()> {
    let (Spec::Nfs(s), Spec::Nfs(d)) = (resolver.spec(src)?, resolver.spec(dst)?) else {
        return Err(CliError::msg(format!(
            "mv: {src} -> {dst}: both must be NFS paths on the same server \
             (mv is an NFS RENAME; use cp, then rm)"
        )));
    };
    if !s.same_server(&d) {
        return Err(CliError::msg(format!(
            "mv: {src} and {dst} are on different servers \
             (mv is an NFS RENAME; use cp, then rm)"
        )));
    }
    let Location::Nfs { client, path: from } = s.open(resolver)? else {
        return Err(resolver.not_nfs(src, "mv"));
    };
    let Some(to) = d.path_in_export(client.export()) else {
        return Err(CliError::msg(format!(
            "mv: {dst} is not in export {} of {src} (a RENAME cannot cross exports; \
             use cp, then rm)",
            client.export()
        )));
    };
    let to = match client.metadata(&to) {
        Ok(m) if m.is_dir() => match nfs_file_name(&from) {
            Some(name) => nfs_join(&to, name),
            None => to,
        },
        _ => to,
    };
    Ok(client.rename(&from, &to)?)
}
