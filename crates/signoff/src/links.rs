//! Symbolic links that lead out of the repository. A committed link to `/home/runner/.ssh/id_ed25519`
//! or to `../../.agency/team.yaml` lets whatever follows it (the verify command, a judge reading files, a
//! later agent writing through it) read or change what is not the project's. The sign-off rejects a slice
//! that commits one; deciding it needs only the link's text, never what it points at.

use std::path::{Component, Path};

/// Where the link at `path` (repository-relative) in `checkout` points, when it is a symbolic link whose
/// target is absolute or climbs out of the repository; `None` for anything else.
pub fn escaping_link(checkout: &Path, path: &str) -> Option<String> {
    let link = checkout.join(path);
    let metadata = std::fs::symlink_metadata(&link).ok()?;
    if !metadata.file_type().is_symlink() {
        return None;
    }
    let target = std::fs::read_link(&link).ok()?;
    let shown = target.to_string_lossy().into_owned();
    if target.is_absolute() {
        return Some(shown);
    }
    // Resolved lexically from the link's directory: every `..` must stay inside the repository.
    let mut depth: usize = Path::new(path).parent().map_or(0, |dir| dir.components().count());
    for component in target.components() {
        match component {
            Component::ParentDir => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return Some(shown),
            },
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Some(shown),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_of_the_repository_are_found_and_links_inside_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        let link = |path: &str, target: &str| std::os::unix::fs::symlink(target, root.join(path)).unwrap();
        link("abs", "/etc/passwd");
        link("up", "../outside");
        link("a/b/deep", "../../../x");
        link("a/b/inside", "../../file");
        link("a/sibling", "b/../../file");
        link("dot", "./file");
        assert_eq!(escaping_link(root, "abs").as_deref(), Some("/etc/passwd"));
        assert_eq!(escaping_link(root, "up").as_deref(), Some("../outside"));
        assert_eq!(escaping_link(root, "a/b/deep").as_deref(), Some("../../../x"));
        for inside in ["a/b/inside", "a/sibling", "dot", "file", "missing"] {
            assert_eq!(escaping_link(root, inside), None, "{inside}");
        }
    }
}
