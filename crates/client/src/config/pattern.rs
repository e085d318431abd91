//! Path patterns of the dnfstab's `log_files:`, `data_files:` and
//! `bulk_files:` keys: a file whose host path matches takes that I/O class
//! when `dnfs run` opens it. `*` matches any run of characters, `/`
//! included (`*/pg_wal/*` is every file below any `pg_wal` directory), `?`
//! one character; everything else matches itself. A pattern is matched
//! against the whole normalised host path (`/db/pg/data/pg_wal/0001`), so
//! it starts with `/` or `*`.

/// Why a pattern was refused.
pub(crate) fn check(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Err("an empty pattern".into());
    }
    if !pattern.starts_with('/') && !pattern.starts_with('*') {
        return Err(format!(
            "\"{pattern}\" can match no file: a pattern is matched against the whole host path, \
             so it starts with / or * (\"*/{pattern}\")"
        ));
    }
    Ok(())
}

/// True if `path` matches `pattern` (see the module doc).
pub(crate) fn matches(pattern: &str, path: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), path.as_bytes());
    // Iterative glob with one backtrack point: the last `*` seen and the
    // path position it was tried at (linear in practice, no recursion).
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_crosses_slashes_and_question_mark_is_one_character() {
        assert!(matches(
            "*/pg_wal/*",
            "/db/pg/data/pg_wal/000000010000000000000001"
        ));
        assert!(!matches("*/pg_wal/*", "/db/pg/data/base/1/1259"));
        assert!(
            !matches("*/pg_wal/*", "/db/pg/data/pg_wal"),
            "the directory itself"
        );
        assert!(matches("*/ib_logfile?", "/db/mysql/ib_logfile0"));
        assert!(!matches("*/ib_logfile?", "/db/mysql/ib_logfile10"));
        assert!(matches(
            "/u01/oradata/*/redo*.log",
            "/u01/oradata/ORCL/redo01.log"
        ));
        assert!(!matches(
            "/u01/oradata/*/redo*.log",
            "/u02/oradata/ORCL/redo01.log"
        ));
        assert!(matches("*", "/anything"));
        assert!(matches("/exact", "/exact") && !matches("/exact", "/exact2"));
        assert!(matches("*a*b*c", "/xaxxbxxc") && !matches("*a*b*c", "/xaxxbxx"));
    }

    #[test]
    fn a_pattern_that_can_match_no_host_path_is_refused() {
        assert!(check("*/pg_wal/*").is_ok() && check("/u01/*").is_ok());
        let e = check("pg_wal/*").unwrap_err();
        assert!(e.contains("*/pg_wal/*"), "{e}");
        assert!(check("").is_err());
    }

    proptest::proptest! {
        /// A literal pattern matches exactly itself; `*` + a suffix
        /// matches exactly the paths ending with it.
        #[test]
        fn literals_and_suffixes_match_as_strings_do(path in "/[a-z/._]{0,30}", suffix in "[a-z/._]{0,8}") {
            proptest::prop_assert!(matches(&path, &path));
            let pat = format!("*{suffix}");
            proptest::prop_assert_eq!(matches(&pat, &path), path.ends_with(&suffix));
        }
    }
}
