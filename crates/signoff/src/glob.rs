//! The `may_edit:` patterns of a goal contract: `/`-separated globs matched against repository-relative
//! paths. `*` matches within one path segment, `**` any number of whole segments, `?` one character. A
//! pattern with no glob characters also matches everything below it, so `tests/` or `tests` authorises the
//! whole directory. Small on purpose: these lists are hand-written and short.

/// Whether `path` (repository-relative, `/`-separated) is matched by `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim().trim_start_matches("./");
    let path = path.trim_start_matches("./");
    if pattern.is_empty() {
        return false;
    }
    let literal = !pattern.contains(['*', '?']);
    let pattern = pattern.trim_end_matches('/');
    if literal {
        return path == pattern || path.starts_with(&format!("{pattern}/"));
    }
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    match_segments(&pattern, &path)
}

fn match_segments(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| match_segments(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((segment, path_rest)) => {
                match_segment(first.as_bytes(), segment.as_bytes()) && match_segments(rest, path_rest)
            }
            None => false,
        },
    }
}

fn match_segment(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| match_segment(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && match_segment(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && match_segment(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn literal_patterns_match_the_path_and_everything_below_it() {
        assert!(matches("tests/test_calc.py", "tests/test_calc.py"));
        assert!(matches("tests", "tests/test_calc.py"));
        assert!(matches("tests/", "tests/unit/test_calc.py"));
        assert!(matches("./tests", "tests/a.py"));
        assert!(!matches("tests", "tests_old/a.py"));
        assert!(!matches("tests/a.py", "tests/a.pyc"));
        assert!(!matches("", "anything"));
    }

    #[test]
    fn stars_stay_in_their_segment_and_double_stars_cross_them() {
        assert!(matches("tests/*.py", "tests/test_a.py"));
        assert!(!matches("tests/*.py", "tests/unit/test_a.py"));
        assert!(matches("tests/**/*.py", "tests/unit/deep/test_a.py"));
        assert!(matches("tests/**/*.py", "tests/test_a.py"));
        assert!(matches("**/conftest.py", "conftest.py"));
        assert!(matches("**/conftest.py", "a/b/conftest.py"));
        assert!(matches("test_?.py", "test_a.py"));
        assert!(!matches("test_?.py", "test_ab.py"));
        assert!(!matches("*.py", "src/a.py"));
    }
}
