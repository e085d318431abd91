//! The lexical path rules every front end shares: [`normalize`] folds `//`,
//! `.` and `..` (never above `/`) without looking at any file system, since
//! the local path under a mount prefix need not exist; [`join`],
//! [`relative_to`] and [`absolute`] build the paths the front ends are
//! given. A leaf: it names no other module of the crate.

use std::io;
use std::path::{Path, PathBuf};

/// Folds `//`, `.` and `..` of an absolute path, lexically: `..` removes
/// the component before it and stops at `/`; no trailing `/` (except for
/// `/` itself). A path without a leading `/` is taken as if it had one.
pub fn normalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1);
    for part in fold(path.as_bytes()) {
        out.push('/');
        // Each part lies between two `/` (ASCII) of a `str`: valid UTF-8.
        out.push_str(std::str::from_utf8(part).unwrap_or_default());
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// [`normalize`] for a path that need not be UTF-8 (a host path as the
/// kernel sees it).
pub fn normalize_bytes(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 1);
    for part in fold(path) {
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// The components left after folding `""`, `.` and `..`.
fn fold(path: &[u8]) -> Vec<&[u8]> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    parts
}

/// `base` + `/` + `rest` with exactly one slash between them (`/` when
/// both are empty or `/`); an export and the path below it, or a directory
/// and a name.
pub fn join(base: &str, rest: &str) -> String {
    let base = base.trim_end_matches('/');
    let rest = rest.trim_start_matches('/');
    if rest.is_empty() {
        if base.is_empty() {
            "/".to_string()
        } else {
            base.to_string()
        }
    } else {
        format!("{base}/{rest}")
    }
}

/// A path given to a client: an absolute one starts at the export root
/// and is kept, a relative one starts at `dir` (the client's target
/// directory, `/` when empty).
pub fn relative_to(dir: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        join(if dir.is_empty() { "/" } else { dir }, path)
    }
}

/// `path` made absolute against the current directory and folded
/// lexically ([`normalize`]): no symbolic links are followed, since a path
/// under a `mount:` prefix need not exist locally.
///
/// # Errors
/// The current directory cannot be read (only asked for a relative path).
pub fn absolute(path: &Path) -> io::Result<PathBuf> {
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir()?
    };
    for c in path.components() {
        match c {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots_and_slashes_without_climbing_above_root() {
        assert_eq!(normalize("/a//b/./c/../d"), "/a/b/d");
        assert_eq!(normalize("/a//b/./c/"), "/a/b/c");
        assert_eq!(normalize("/a/b/../c"), "/a/c");
        assert_eq!(normalize("/../../x"), "/x");
        assert_eq!(normalize("/.."), "/");
        assert_eq!(normalize("/a/.."), "/");
        assert_eq!(normalize("/"), "/");
        assert_eq!(normalize(""), "/");
        assert_eq!(normalize("a/b"), "/a/b");
        assert_eq!(normalize("/é/./ü"), "/é/ü");
        assert_eq!(normalize_bytes(b"/a/\xff/../\xfe/."), b"/a/\xfe");
        assert_eq!(normalize_bytes(b"//"), b"/");
    }

    #[test]
    fn join_puts_one_slash_between() {
        assert_eq!(join("/vol/a", "/f"), "/vol/a/f");
        assert_eq!(join("/vol/a/", "f"), "/vol/a/f");
        assert_eq!(join("/vol/x", "/a/b"), "/vol/x/a/b");
        assert_eq!(join("/vol/x", "/"), "/vol/x");
        assert_eq!(join("/", "/f"), "/f");
        assert_eq!(join("/vol", "/"), "/vol");
        assert_eq!(join("/", "/"), "/");
        assert_eq!(join("", ""), "/");
    }

    #[test]
    fn relative_paths_start_at_the_target() {
        assert_eq!(relative_to("/dir", "f.dat"), "/dir/f.dat");
        assert_eq!(relative_to("/dir", "/f.dat"), "/f.dat");
        assert_eq!(relative_to("/", "f.dat"), "/f.dat");
        assert_eq!(relative_to("", "f.dat"), "/f.dat");
    }

    #[test]
    fn absolute_resolves_dots_lexically() {
        assert_eq!(
            absolute(Path::new("/db/x/../y/./f")).ok(),
            Some(PathBuf::from("/db/y/f"))
        );
        assert_eq!(absolute(Path::new("/../..")).ok(), Some(PathBuf::from("/")));
        let Ok(cwd) = std::env::current_dir() else {
            return;
        };
        assert_eq!(absolute(Path::new("a/./b")).ok(), Some(cwd.join("a/b")));
    }
}
