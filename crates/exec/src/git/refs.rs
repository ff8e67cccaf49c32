//! A branch's commit read from its loose ref file, without starting git.
//!
//! git's default ref store (the "files" backend, `gitrepository-layout(5)`) keeps a branch it has written
//! as the file `refs/heads/<name>` in the common git directory, holding the commit id and a newline; it
//! writes that file whole (a lock file renamed over it) on every update, and a loose file is what git itself
//! reads before `packed-refs`. The runner resolves a slice's own branch and its workstream branch once when
//! the slice is committed and once when it is signed off; reading two small files instead of starting
//! `rev-parse` is most of that cost. Anything else — a ref only in `packed-refs`, the reftable backend, a
//! symbolic ref, a name that is not plainly a branch — is left to git ([`Repo::rev_parse_all`]).

use super::Repo;

impl Repo {
    /// The commit id of the full branch name `rev` (`refs/heads/…`) from its loose ref file; `None` when
    /// git must be asked.
    pub(super) fn loose_branch(&self, rev: &str) -> Option<String> {
        let name = rev.strip_prefix("refs/heads/")?;
        let common = self.common_dir();
        // A probe knows no git directory; with reftable, `refs/heads` is a placeholder file.
        if common.as_os_str().is_empty() || !is_plain_branch_name(name) || common.join("reftable").exists() {
            return None;
        }
        let text = std::fs::read(common.join("refs/heads").join(name)).ok()?;
        let id = text.strip_suffix(b"\n")?;
        is_object_id(id).then(|| String::from_utf8_lossy(id).into_owned())
    }
}

/// Whether `name` is a branch name git would accept whose file stays inside `refs/heads` (no empty, dotted
/// or `.lock` component, none of the characters git refuses in a ref name). A name git would refuse is
/// left to git, which says why.
fn is_plain_branch_name(name: &str) -> bool {
    name.split('/').all(|component| {
        !component.is_empty() && !component.starts_with('.') && !component.ends_with(".lock")
    }) && !name.contains("..")
        && !name.contains("@{")
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
}

/// A full SHA-1 or SHA-256 object id in git's lower-case hex.
fn is_object_id(id: &[u8]) -> bool {
    matches!(id.len(), 40 | 64) && id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_branch_names_and_full_ids_are_read() {
        for name in ["main", "agency/0123abcd/ws-arith/work", "a.b/c_d-e"] {
            assert!(is_plain_branch_name(name), "{name}");
        }
        for name in [
            "",
            "a//b",
            "../x",
            "a/../../b",
            ".hidden",
            "a/.b",
            "x.lock",
            "a..b",
            "a@{1}",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a\nb",
            "/a",
            "a/",
        ] {
            assert!(!is_plain_branch_name(name), "{name:?}");
        }
        assert!(is_object_id(&[b'a'; 40]));
        assert!(is_object_id(&[b'0'; 64]));
        assert!(!is_object_id(&[b'A'; 40]));
        assert!(!is_object_id(&[b'a'; 41]));
        assert!(!is_object_id(b"ref: refs/heads/main"));
    }
}
