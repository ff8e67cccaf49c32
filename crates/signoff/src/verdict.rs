//! The judge's verdict block, parsed strictly. The judge's final text must end with
//!
//! ```text
//! VERDICT: accept            (or reject)
//! missing:                   (or `missing: none`, or `missing: one thing; another`)
//!   - what is missing
//! ```
//!
//! The last `VERDICT:` line counts; after it only the `missing:` line and its `-`/`*` items (or blank lines)
//! may follow. Anything else — no verdict, another word, prose after the block, an accept that still lists
//! missing items — is not a verdict, and the sign-off is *inconclusive*, never accepted.

use serde::Serialize;

/// What the judge decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum JudgeVerdict {
    /// The work meets the contract.
    Accept,
    /// It does not; these are the gaps.
    Reject {
        /// What is missing, one item each.
        missing: Vec<String>,
    },
}

/// Parses the verdict block at the end of `text`; the error says what was wrong with it.
pub fn parse_verdict(text: &str) -> Result<JudgeVerdict, String> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().rposition(|l| l.trim_start().starts_with("VERDICT:")) else {
        return Err("the judge's answer has no `VERDICT:` line".into());
    };
    let word = lines[at].trim_start()["VERDICT:".len()..]
        .trim()
        .trim_matches('*')
        .trim();
    let accept = match word.to_ascii_lowercase().as_str() {
        "accept" => true,
        "reject" => false,
        _ => return Err(format!("`VERDICT: {word}`: expected accept or reject")),
    };
    let mut rest = lines[at + 1..].iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    let Some(header) = rest.next() else {
        return Err("the verdict is not followed by a `missing:` line".into());
    };
    let Some(inline) = header.strip_prefix("missing:") else {
        return Err(format!(
            "after the verdict: expected `missing:`, found {header:?}"
        ));
    };
    let mut missing: Vec<String> = inline
        .split(';')
        .map(str::trim)
        .filter(|item| !is_none(item))
        .map(str::to_string)
        .collect();
    for line in rest {
        let Some(item) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) else {
            return Err(format!(
                "after `missing:`: expected `- item` lines only, found {line:?}"
            ));
        };
        if !is_none(item.trim()) {
            missing.push(item.trim().to_string());
        }
    }
    match (accept, missing.is_empty()) {
        (true, true) => Ok(JudgeVerdict::Accept),
        (true, false) => Err(format!(
            "the judge accepted but listed missing items: {}",
            missing.join("; ")
        )),
        (false, true) => Ok(JudgeVerdict::Reject {
            missing: vec!["the judge rejected without naming what is missing".into()],
        }),
        (false, false) => Ok(JudgeVerdict::Reject { missing }),
    }
}

fn is_none(item: &str) -> bool {
    matches!(
        item.to_ascii_lowercase().trim_end_matches('.'),
        "" | "none" | "nothing" | "n/a" | "[]" | "-"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_with_nothing_missing() {
        for text in [
            "Checked the test.\nVERDICT: accept\nmissing: none\n",
            "VERDICT: accept\nmissing:\n",
            "VERDICT: **accept**\n\nmissing: none.",
            "VERDICT: reject\nmissing: x\nlater I changed my mind\n\nVERDICT: Accept\nmissing: []",
        ] {
            assert_eq!(parse_verdict(text), Ok(JudgeVerdict::Accept), "{text}");
        }
    }

    #[test]
    fn reject_lists_items_inline_or_as_bullets() {
        assert_eq!(
            parse_verdict("VERDICT: reject\nmissing:\n- the test was weakened\n* no log\n"),
            Ok(JudgeVerdict::Reject {
                missing: vec!["the test was weakened".into(), "no log".into()]
            })
        );
        assert_eq!(
            parse_verdict("VERDICT: reject\nmissing: a; b"),
            Ok(JudgeVerdict::Reject {
                missing: vec!["a".into(), "b".into()]
            })
        );
        assert!(matches!(
            parse_verdict("VERDICT: reject\nmissing: none"),
            Ok(JudgeVerdict::Reject { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in "(?s).{0,300}") {
            let _ = parse_verdict(&text);
        }

        #[test]
        fn prose_before_the_block_does_not_matter(
            prose in "[a-zA-Z .,\n]{0,200}",
            items in proptest::collection::vec("[a-z][a-z ]{0,20}", 0..4),
        ) {
            let mut block = String::from("VERDICT: reject\nmissing:\n");
            for item in &items {
                block.push_str(&format!("- {item}\n"));
            }
            let parsed = parse_verdict(&format!("{prose}\n{block}")).unwrap();
            let JudgeVerdict::Reject { missing } = parsed else { panic!("not a reject") };
            let expected: Vec<String> = items.iter().map(|i| i.trim().to_string()).filter(|i| !is_none(i)).collect();
            if expected.is_empty() {
                proptest::prop_assert_eq!(missing.len(), 1);
            } else {
                proptest::prop_assert_eq!(missing, expected);
            }
            let accept = parse_verdict(&format!("{prose}\nVERDICT: accept\nmissing: none\n")).unwrap();
            proptest::prop_assert_eq!(accept, JudgeVerdict::Accept);
        }
    }

    #[test]
    fn anything_else_is_no_verdict() {
        for text in [
            "",
            "Looks good to me!",
            "VERDICT: maybe\nmissing: none",
            "VERDICT: accept",
            "VERDICT: accept\nthe tests pass",
            "VERDICT: accept\nmissing: none\nThanks!",
            "VERDICT: accept\nmissing:\n- the bench",
            "verdict: accept\nmissing: none",
        ] {
            assert!(parse_verdict(text).is_err(), "{text:?}");
        }
    }
}
