//! Which paths are NFS paths.
//!
//! A path is served when it resolves — as an absolute path, relative to the
//! current directory, or relative to a directory descriptor of an `*at`
//! call — to a path under a dnfstab `mount:` prefix. Resolution is lexical
//! (`//`, `.` and `..` are folded before the prefix test); a local
//! symbolic link into a mount is followed only once the local call failed
//! with `ENOENT` (links.rs). Symbolic links *on* NFS are followed by the
//! calls that follow links (resolve.rs).
//!
//! The cost for a local path is the one that matters: an absolute path is
//! compared with each prefix (after a scan for `//`, `/.`), a relative
//! one costs one atomic load unless the current directory is on NFS or
//! above a mount prefix, or the path climbs with `..`.

use std::ffi::CStr;

use libc::{c_char, c_int};

use dnfs::config::normalize_bytes as normalize;

use crate::cwd;
use crate::fdtable;
use crate::state::{self, State};

/// Longest name of one component (as NFS servers and Linux allow).
const NAME_MAX: usize = 255;

/// A path under a mount prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NfsPath {
    /// Index of the mount.
    pub mount: usize,
    /// The normalised absolute host path (`/db/ora/base/1`).
    pub host: String,
    /// The path below the export root (`/base/1`, `/` for the root).
    pub rest: String,
    /// The path ended with `/` (or `/.`): it must name a directory.
    pub trailing_slash: bool,
    /// What the last component was as written: folding turns `d/.` and
    /// `d/x/..` into `d`, but `rmdir` and `rename` refuse such names.
    pub last: Last,
    /// The directories named before each `..` or `.` of the path as
    /// written, folded (`/db/e/missing` for `/db/e/missing/..`): the
    /// kernel walks through them, so each must exist, be a directory and
    /// be searchable, or the call fails (`ENOENT`, `ENOTDIR`, `EACCES`)
    /// where folding alone would have gone on.
    pub via: Vec<Vec<u8>>,
}

/// The last component of a path as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Last {
    /// A name (or the root).
    #[default]
    Name,
    /// `.`
    Dot,
    /// `..`
    DotDot,
}

/// Where a call goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// To libc, untouched.
    Local,
    /// To NFS.
    Nfs(NfsPath),
    /// To libc, with this absolute path instead: the path named NFS
    /// (`/db/ora/..`, or `..` from an NFS current directory) but folds to
    /// a local one, which the kernel could not reach through the mount
    /// prefix (it does not exist locally).
    Redirect(std::ffi::CString),
    /// Nowhere: an NFS path that cannot be served (errno).
    Bad(c_int),
}

/// Where `path` (relative to `dirfd`, or `AT_FDCWD`) goes.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[inline]
pub unsafe fn route(dirfd: c_int, path: *const c_char) -> Route {
    let Some(state) = state::get() else {
        return Route::Local;
    };
    if bad_pointer(path) {
        return Route::Local; // the kernel's call says EFAULT
    }
    // SAFETY: the caller passes a C string.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if bytes.len() >= libc::PATH_MAX as usize {
        return Route::Local; // the kernel's call says ENAMETOOLONG
    }
    route_bytes(state, dirfd, bytes)
}

/// A pointer no C string can be at: NULL and the page after it (`NULL +
/// offset`), and addresses above the user half of x86_64's address space
/// (kernel and non-canonical ones, `(char *)-1`). Reading one would crash
/// the program inside this library where the kernel answers `EFAULT`;
/// other unmapped addresses cannot be told without a system call per
/// path (docs/run-deviations.md, `bad-pointers`).
#[inline(always)]
pub fn bad_pointer(p: *const c_char) -> bool {
    let a = p as usize;
    !(4096..0x0000_8000_0000_0000).contains(&a)
}

/// [`route`] of a path given as bytes.
pub fn route_bytes(state: &State, dirfd: c_int, path: &[u8]) -> Route {
    match path.first() {
        None => Route::Local,
        Some(b'/') => classify_absolute(state, path),
        Some(_) if dirfd != libc::AT_FDCWD => relative_to_fd(state, dirfd, path),
        Some(_) => relative_to_cwd(state, path),
    }
}

fn relative_to_fd(state: &State, dirfd: c_int, path: &[u8]) -> Route {
    let Some(open) = fdtable::get(dirfd) else {
        return relative_to_local_fd(state, dirfd, path);
    };
    match &open.path {
        Some(dir) => redirect_local(state, &join(dir.host.as_bytes(), path)),
        None => Route::Bad(libc::EOPNOTSUPP),
    }
}

/// A relative path from a local directory descriptor leads to NFS when
/// the directory is above a mount prefix (rsync and other careful walkers
/// open `/` and go on one component at a time: `fstatat(fd, "db")`), or
/// when it climbs with `..`. Only then is the descriptor's path asked of
/// the kernel (`/proc/self/fd`): any other path costs a comparison of its
/// first component with the prefixes' components.
fn relative_to_local_fd(state: &State, dirfd: c_int, path: &[u8]) -> Route {
    let first = path.split(|&b| b == b'/').next().unwrap_or_default();
    let may_reach =
        state.config.prefix_names.iter().any(|n| n == first) || (has_dotdot(path) && climbs(path));
    if !may_reach {
        return Route::Local;
    }
    match descriptor_target(dirfd) {
        Some(dir) if dir.first() == Some(&b'/') => classify_absolute(state, &join(&dir, path)),
        _ => Route::Local,
    }
}

/// What the kernel says a descriptor is (`/proc/self/fd/N`): a path for a
/// file or directory, `anon_inode:[io_uring]`, `socket:[...]`, ...
pub fn descriptor_target(fd: c_int) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    Some(target.into_os_string().into_vec())
}

fn relative_to_cwd(state: &State, path: &[u8]) -> Route {
    let may_reach = cwd::may_reach_nfs() || (has_dotdot(path) && climbs(path));
    if !may_reach {
        return Route::Local;
    }
    let base = cwd::host();
    let full = join(base.as_bytes(), path);
    if cwd::is_nfs() {
        return redirect_local(state, &full);
    }
    classify_absolute(state, &full)
}

/// Classifies a path built from an NFS directory: a local result is a
/// redirect to the folded path (the kernel's working directory is not the
/// NFS directory).
fn redirect_local(state: &State, full: &[u8]) -> Route {
    match classify_absolute(state, full) {
        Route::Local => to_redirect(state, normalize(full)),
        other => other,
    }
}

fn to_redirect(state: &State, path: Vec<u8>) -> Route {
    if let Some(mirror) = ancestor_mirror(state, &path) {
        return mirror;
    }
    match std::ffi::CString::new(path) {
        Ok(c) => Route::Redirect(c),
        Err(_) => Route::Bad(libc::EINVAL),
    }
}

/// A local path (folded) that is a strict ancestor of a mount prefix
/// (`/db` for `mount: /db/pg`) and does not exist locally: a kernel mount
/// point always exists in its parent, and programs that create a data
/// directory walk down from `/` (`mkdir -p`, PostgreSQL's `initdb`: a
/// `stat`, then a `mkdir` where it is missing, which a user who may not
/// write in `/` cannot do). Such a path is served by a directory of the
/// shadow directory's mirror tree that holds the next components down to
/// each prefix below it (`/dev/shm/directnfs/cwd/db/pg`): `stat` and
/// `opendir` find a directory listing the next component, `mkdir` says
/// `EEXIST`, `rmdir` `ENOTEMPTY`, `chdir` enters it (`getcwd` says `/db`).
/// None for any other path (one comparison with each ancestor).
#[inline(never)]
fn ancestor_mirror(state: &State, path: &[u8]) -> Option<Route> {
    let dir = match path.iter().rposition(|&b| b != b'/') {
        Some(end) => &path[..=end],
        None => return None, // `/` exists
    };
    if !state.config.ancestors.iter().any(|a| a == dir) {
        return None;
    }
    let below = |m: &&crate::config::Mount| {
        let p = m.prefix.as_bytes();
        p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/'
    };
    let c = std::ffi::CString::new(dir).ok()?;
    // SAFETY: a zeroed `stat` is a valid out-buffer.
    let mut st: crate::real::Stat = unsafe { std::mem::zeroed() };
    // SAFETY: a C string and a buffer of the right type.
    if unsafe { crate::real::lstat(c.as_ptr(), &mut st) } == 0 {
        return None; // it exists locally: the kernel's
    }
    for m in state.config.mounts.iter().filter(below) {
        let mirror = format!("{}{}", state.shadow.cwd_root, m.prefix);
        if crate::cwd::make_mirror_dirs(state, &mirror).is_err() {
            return None;
        }
    }
    let mut mirror = state.shadow.cwd_root.as_bytes().to_vec();
    mirror.extend_from_slice(dir);
    std::ffi::CString::new(mirror).ok().map(Route::Redirect)
}

/// True if `route` is a mount prefix's missing ancestor (`ancestor_mirror`).
pub fn is_ancestor_mirror(state: &State, route: &Route) -> bool {
    match route {
        Route::Redirect(p) => p
            .to_bytes()
            .strip_prefix(state.shadow.cwd_root.as_bytes())
            .is_some_and(|rest| rest.first() == Some(&b'/')),
        _ => false,
    }
}

/// Classifies an absolute path.
pub fn classify_absolute(state: &State, path: &[u8]) -> Route {
    if !near_a_prefix(state, path) && !has_dotdot(path) {
        // (`/./db` would fold to an ancestor too; `/db/.` and `//db` are
        // near a prefix and folded below.)
        if state.config.ancestors.is_empty() {
            return Route::Local;
        }
        return ancestor_mirror(state, path).unwrap_or(Route::Local);
    }
    if needs_folding(path) {
        let folded = normalize(path);
        let r = classify_normal(state, &folded, trailing_slash(path));
        if r == Route::Local && through_a_prefix(state, path) {
            return to_redirect(state, folded);
        }
        if r == Route::Local {
            return ancestor_mirror(state, &folded).unwrap_or(Route::Local);
        }
        return match r {
            Route::Nfs(mut p) => {
                p.last = last_component(path);
                p.via = dirs_before_dots(path);
                Route::Nfs(p)
            }
            other => other,
        };
    }
    match classify_normal(state, path, trailing_slash(path)) {
        Route::Local => ancestor_mirror(state, path).unwrap_or(Route::Local),
        r => r,
    }
}

/// True if `path` starts with a mount prefix, or leaves one with `//` or
/// `/.` exactly where it stops matching (`/db//ora`, `/db/./ora` for
/// `/db/ora`): the only ways, short of `..`, to name an NFS path. The
/// common local path differs from every prefix within a few bytes.
#[inline]
fn near_a_prefix(state: &State, path: &[u8]) -> bool {
    // The common local path (`/usr/...`) has a first component no prefix
    // has: a few length comparisons, however many mounts there are.
    if let [b'/', c, rest @ ..] = path {
        if *c != b'/' && *c != b'.' {
            let len = rest
                .iter()
                .position(|&b| b == b'/')
                .map_or(path.len(), |i| i + 2);
            if !state.config.may_lead(&path[1..len]) {
                return false;
            }
        }
    }
    state.config.mounts.iter().any(|m| {
        let prefix = m.prefix.as_bytes();
        let d = path
            .iter()
            .zip(prefix)
            .position(|(a, b)| a != b)
            .unwrap_or(prefix.len().min(path.len()));
        if d == prefix.len() {
            return true;
        }
        d > 0 && path[d - 1] == b'/' && matches!(path.get(d), Some(b'/' | b'.'))
    })
}

/// True if `path` has `..` anywhere: eight bytes at a time, each word
/// turned into a mask of its `.` bytes (exact, no false positives) and
/// tested for two neighbours, within the word and across words.
#[inline]
fn has_dotdot(path: &[u8]) -> bool {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const DOTS: u64 = 0x2e2e_2e2e_2e2e_2e2e;
    // Bit 7 of each byte set exactly where the byte of `w` is a dot.
    let dots = |w: u64| {
        let x = w ^ DOTS;
        !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
    };
    let mut carry = 0u64; // bit 7 set: the previous word ended with a dot
    let mut chunks = path.chunks_exact(8);
    for c in &mut chunks {
        // One unaligned load: `c` is exactly eight bytes.
        let word = <[u8; 8]>::try_from(c).map_or(0, u64::from_le_bytes);
        let m = dots(word);
        if m & ((m << 8) | carry) != 0 {
            return true;
        }
        carry = m >> 56;
    }
    let word = chunks
        .remainder()
        .iter()
        .rev()
        .fold(0u64, |w, &b| (w << 8) | u64::from(b));
    let m = dots(word);
    m & ((m << 8) | carry) != 0
}

fn classify_normal(state: &State, path: &[u8], trailing: bool) -> Route {
    for (i, m) in state.config.mounts.iter().enumerate() {
        let prefix = m.prefix.as_bytes();
        if !path.starts_with(prefix) {
            continue;
        }
        let rest = &path[prefix.len()..];
        if !(rest.is_empty() || rest[0] == b'/') {
            continue;
        }
        let Ok(host) = std::str::from_utf8(path) else {
            return Route::Bad(libc::EILSEQ);
        };
        let host = host.trim_end_matches('/');
        let rest = &host[prefix.len()..];
        // PATH_MAX bounds the path a call is given (route), not the
        // absolute path it names from a directory: a short relative path
        // from a deep directory is served, as by the kernel.
        if rest.split('/').any(|c| c.len() > NAME_MAX) {
            return Route::Bad(libc::ENAMETOOLONG);
        }
        return Route::Nfs(NfsPath {
            mount: i,
            host: host.to_string(),
            rest: if rest.is_empty() {
                "/".into()
            } else {
                rest.into()
            },
            trailing_slash: trailing,
            last: Last::Name,
            via: Vec::new(),
        });
    }
    Route::Local
}

/// True if `path` starts with a mount prefix (before any folding).
fn through_a_prefix(state: &State, path: &[u8]) -> bool {
    state.config.mounts.iter().any(|m| {
        let p = m.prefix.as_bytes();
        path.starts_with(p) && path.get(p.len()).is_none_or(|&b| b == b'/')
    })
}

/// `dir` + `/` + `rel`.
pub fn join(dir: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(dir.len() + rel.len() + 1);
    v.extend_from_slice(dir);
    if !dir.ends_with(b"/") {
        v.push(b'/');
    }
    v.extend_from_slice(rel);
    v
}

/// True if an absolute path has `//`, `/.` or `/..` to fold.
#[inline]
fn needs_folding(path: &[u8]) -> bool {
    path.windows(2)
        .any(|w| w[0] == b'/' && (w[1] == b'/' || w[1] == b'.'))
}

fn trailing_slash(path: &[u8]) -> bool {
    path.len() > 1 && (path.ends_with(b"/") || path.ends_with(b"/."))
}

/// The last component of `path` as written (trailing slashes ignored).
fn last_component(path: &[u8]) -> Last {
    let trimmed = match path.iter().rposition(|&b| b != b'/') {
        Some(end) => &path[..=end],
        None => return Last::Name,
    };
    match trimmed.rsplit(|&b| b == b'/').next() {
        Some(b".") => Last::Dot,
        Some(b"..") => Last::DotDot,
        _ => Last::Name,
    }
}

/// The directories an absolute path names before each of its `..` or `.`
/// components (not a leading one), folded, without repeats (none for a
/// path without them).
pub fn dirs_before_dots(path: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut start = 0;
    for comp in path.split(|&b| b == b'/') {
        if (comp == b".." || comp == b".") && start > 0 {
            let dir = normalize(&path[..start]);
            if dir != b"/" && !out.contains(&dir) {
                out.push(dir);
            }
        }
        start += comp.len() + 1;
    }
    out
}

/// True if a relative path has a `..` component (it may climb out of the
/// current directory into a mount prefix).
#[inline]
fn climbs(path: &[u8]) -> bool {
    path.split(|&b| b == b'/').any(|c| c == b"..")
}

/// The directory part of a host path (`/a/b` -> `/a`, `/a` -> `/`).
pub fn parent(host: &str) -> &str {
    match host.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &host[..i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_with_slash_dot_or_double_slash_need_folding() {
        assert!(!needs_folding(b"/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(needs_folding(b"/db//x"));
        assert!(needs_folding(b"/db/./x"));
        assert!(needs_folding(b"/tmp/../db"));
        assert!(
            needs_folding(b"/db/.hidden"),
            "harmless: folded, same result"
        );
    }

    #[test]
    fn climbing_is_a_dotdot_component() {
        assert!(climbs(b"../db"));
        assert!(climbs(b"a/../../b"));
        assert!(!climbs(b"..a/b"));
        assert!(!climbs(b"a/b.."));
        assert!(has_dotdot(b"a/../b") && has_dotdot(b"..") && !has_dotdot(b"a/.b/c."));
        // Every position, across the 8-byte words.
        for at in 0..20 {
            let mut p = vec![b'x'; 21];
            p[at] = b'.';
            p[at + 1] = b'.';
            assert!(has_dotdot(&p), "at {at}");
            p[at + 1] = b'/';
            assert!(!has_dotdot(&p), "single dot at {at}");
        }
    }

    #[test]
    fn the_last_component_and_the_directories_before_dots_are_kept() {
        assert_eq!(last_component(b"/db/d/."), Last::Dot);
        assert_eq!(last_component(b"/db/d/./"), Last::Dot);
        assert_eq!(last_component(b"/db/e/x/.."), Last::DotDot);
        assert_eq!(last_component(b"/db/e/x/..//"), Last::DotDot);
        assert_eq!(last_component(b"/db/e/.x"), Last::Name);
        assert_eq!(last_component(b"/"), Last::Name);
        assert_eq!(
            dirs_before_dots(b"/db/e/missing/.."),
            [b"/db/e/missing".to_vec()]
        );
        assert_eq!(
            dirs_before_dots(b"/db/a/../b/./../c"),
            [b"/db/a".to_vec(), b"/db/b".to_vec()]
        );
        assert_eq!(dirs_before_dots(b"/db/a/./b"), [b"/db/a".to_vec()]);
        let st2 = state(&["/dnfs-paths-test-none/db/pg", "/x"]);
        assert_eq!(
            st2.config.ancestors,
            [
                b"/dnfs-paths-test-none".to_vec(),
                b"/dnfs-paths-test-none/db".to_vec()
            ]
        );
        let st = state(&["/db"]);
        match classify_absolute(&st, b"/db/e/missing/..") {
            Route::Nfs(p) => {
                assert_eq!(p.rest, "/e");
                assert_eq!(p.last, Last::DotDot);
                assert_eq!(p.via, [b"/db/e/missing".to_vec()]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn join_and_parent_split_host_paths() {
        assert_eq!(join(b"/a", b"b"), b"/a/b");
        assert_eq!(join(b"/", b"b"), b"/b");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/"), "/");
    }

    fn state(prefixes: &[&str]) -> State {
        State::for_tests(prefixes)
    }

    #[test]
    fn relative_paths_from_a_local_directory_descriptor_reach_a_prefix_below_it() {
        let st = state(&["/dnfs-paths-test/db"]);
        assert_eq!(
            st.config.prefix_names,
            [b"db".to_vec(), b"dnfs-paths-test".to_vec()]
        );
        let open = |p: &str| {
            let c = std::ffi::CString::new(p).unwrap();
            // SAFETY: a C string; the descriptor is closed below.
            unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_DIRECTORY) }
        };
        let (root, tmp) = (open("/"), open("/tmp"));
        assert!(root >= 0 && tmp >= 0);
        let rest = |r: Route| match r {
            Route::Nfs(n) => Some(n.rest),
            _ => None,
        };
        assert_eq!(
            rest(route_bytes(&st, root, b"dnfs-paths-test/db/x")),
            Some("/x".into())
        );
        assert_eq!(
            rest(route_bytes(&st, tmp, b"../dnfs-paths-test/db")),
            Some("/".into())
        );
        assert_eq!(
            route_bytes(&st, root, b"dnfs-paths-test/other"),
            Route::Local
        );
        assert_eq!(route_bytes(&st, root, b"etc/passwd"), Route::Local);
        assert_eq!(route_bytes(&st, tmp, b"db/x"), Route::Local);
        assert_eq!(route_bytes(&st, tmp, b".."), Route::Local);
        // SAFETY: descriptors opened above.
        unsafe {
            libc::close(root);
            libc::close(tmp);
        }
    }

    #[test]
    fn absolute_paths_match_whole_components_of_the_longest_prefix() {
        let st = state(&["/db", "/db/redo"]);
        let nfs = |p: &str| match classify_absolute(&st, p.as_bytes()) {
            Route::Nfs(n) => Some((
                st.config.mounts[n.mount].prefix.clone(),
                n.rest,
                n.trailing_slash,
            )),
            _ => None,
        };
        assert_eq!(nfs("/db/x"), Some(("/db".into(), "/x".into(), false)));
        assert_eq!(
            nfs("/db/redo/log1"),
            Some(("/db/redo".into(), "/log1".into(), false))
        );
        assert_eq!(nfs("/db"), Some(("/db".into(), "/".into(), false)));
        assert_eq!(nfs("/db/dir/"), Some(("/db".into(), "/dir".into(), true)));
        assert_eq!(
            nfs("/tmp/../db/y"),
            Some(("/db".into(), "/y".into(), false))
        );
        assert_eq!(nfs("/dbx/y"), None);
        assert_eq!(nfs("/db/../etc/passwd"), None);
        assert_eq!(
            classify_absolute(&st, b"/db/../etc/passwd"),
            Route::Redirect(std::ffi::CString::new("/etc/passwd").unwrap())
        );
        assert_eq!(classify_absolute(&st, b"/etc/./passwd"), Route::Local);
        assert_eq!(nfs("//db/x"), Some(("/db".into(), "/x".into(), false)));
        assert_eq!(nfs("/./db/x"), Some(("/db".into(), "/x".into(), false)));
        assert_eq!(
            nfs("/usr/../db/x"),
            Some(("/db".into(), "/x".into(), false))
        );
        assert_eq!(
            nfs("/d/../db/redo/./y"),
            Some(("/db/redo".into(), "/y".into(), false))
        );
        assert_eq!(
            nfs("/db/redo//y"),
            Some(("/db/redo".into(), "/y".into(), false))
        );
        assert_eq!(nfs("/"), None);
        assert_eq!(
            classify_absolute(&st, b"/db/\xff"),
            Route::Bad(libc::EILSEQ)
        );
        let long = format!("/db/{}", "x".repeat(256));
        assert_eq!(
            classify_absolute(&st, long.as_bytes()),
            Route::Bad(libc::ENAMETOOLONG)
        );
    }
}
