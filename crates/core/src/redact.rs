//! Secrets kept out of everything agency records or serves. A [`Redactor`] knows the secret values the
//! runner holds (each with the name of the variable it came from) and the shapes of well-known tokens, and
//! replaces either wherever it appears with a label that says what was there: `[redacted:GITHUB_TOKEN]`,
//! `[redacted:github-token]`.
//!
//! Which values count as secret ([`Redactor::from_env`]): every variable whose name looks secret
//! ([`looks_secret`]: `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_PAT`, …) and every variable a caller
//! names (the providers' `api_key_env`, team.yaml's `secrets.extra_env`). A value shorter than
//! [`MIN_SECRET_LEN`] characters is not redacted: replacing every `1234` or `true` would shred ordinary text,
//! and no real key is that short. Such a value is still never passed to an agent (agents get an allow-listed
//! environment, not a filtered one).
//!
//! Known token shapes ([`TokenShape`]) are redacted wherever they appear, held by the runner or not: an
//! agent can find a key in the repository and print it.
//!
//! The store applies one redactor to every event and artifact it writes (`agency_store::RedactingBlackboard`),
//! so nothing a caller forgets reaches the blackboard, and what reads the blackboard (the dashboard, the live
//! log, notifications, a pull request's body) serves only redacted text.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// Values shorter than this many characters are not redacted (see the module docs).
pub const MIN_SECRET_LEN: usize = 8;

/// Name fragments that mark a variable as secret wherever they appear in its name.
const SECRET_NAME_PARTS: [&str; 8] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
];

/// Name endings that mark a variable as secret.
const SECRET_NAME_ENDINGS: [&str; 3] = ["_KEY", "_PAT", "_PASS"];

/// Whether a variable's name says it holds a secret: it contains `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`,
/// `CREDENTIAL`, `API_KEY`, `APIKEY` or `PRIVATE_KEY`, or ends in `_KEY`, `_PAT` or `_PASS` (any case).
/// `KEYBOARD_LAYOUT` and `SSH_AUTH_SOCK` do not; `AWS_SECRET_ACCESS_KEY` and `GH_PAT` do.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "KEY"
        || SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
        || SECRET_NAME_ENDINGS.iter().any(|end| upper.ends_with(end))
}

/// A well-known token format, redacted wherever it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenShape {
    /// `sk-…` (Anthropic, OpenAI and compatible API keys), 20 or more key characters after `sk-`.
    ApiKey,
    /// `ghp_…`, `gho_…`, `ghu_…`, `ghs_…`, `ghr_…`, `github_pat_…`.
    GithubToken,
    /// Slack's `xoxb-…`, `xoxp-…`, `xoxa-…`, `xoxo-…`, `xoxr-…`, `xoxs-…`.
    SlackToken,
    /// AWS access key ids: `AKIA…` and `ASIA…` with 16 more upper-case letters and digits.
    AwsAccessKey,
    /// A PEM private key block, from `-----BEGIN … PRIVATE KEY-----` to its end line (or the end of the text,
    /// when it was cut).
    PrivateKey,
}

impl TokenShape {
    /// Every shape, in the order they are tried.
    pub const ALL: [TokenShape; 5] = [
        TokenShape::PrivateKey,
        TokenShape::ApiKey,
        TokenShape::GithubToken,
        TokenShape::SlackToken,
        TokenShape::AwsAccessKey,
    ];

    /// What the redaction label says: `[redacted:github-token]`.
    pub fn label(self) -> &'static str {
        match self {
            TokenShape::ApiKey => "api-key",
            TokenShape::GithubToken => "github-token",
            TokenShape::SlackToken => "slack-token",
            TokenShape::AwsAccessKey => "aws-access-key",
            TokenShape::PrivateKey => "private-key",
        }
    }

    /// The literal text every match of [`TokenShape::pattern`] starts with, one of these: a text in which
    /// none appears holds no token of this shape ([`Redactor::may_redact_json`]). Beside the pattern, so a
    /// shape added there says here what it starts with.
    fn starts(self) -> &'static [&'static str] {
        match self {
            TokenShape::ApiKey => &["sk-"],
            TokenShape::GithubToken => &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
            TokenShape::SlackToken => &["xox"],
            TokenShape::AwsAccessKey => &["AKIA", "ASIA"],
            TokenShape::PrivateKey => &["-----BEGIN"],
        }
    }

    /// The pattern. Word boundaries are ASCII, so `task-…` is not an `sk-` key and the pattern means the
    /// same on text and on bytes.
    fn pattern(self) -> &'static str {
        match self {
            TokenShape::ApiKey => r"(?-u:\b)sk-[A-Za-z0-9_\-]{20,}",
            TokenShape::GithubToken => r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
            TokenShape::SlackToken => r"(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}",
            TokenShape::AwsAccessKey => r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
            TokenShape::PrivateKey => {
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)"
            }
        }
    }
}

/// Every shape as one alternation, one capture group per shape in [`TokenShape::ALL`]'s order.
fn shapes_pattern() -> String {
    TokenShape::ALL
        .iter()
        .map(|shape| format!("({})", shape.pattern()))
        .collect::<Vec<_>>()
        .join("|")
}

/// The shapes as a text regex; `None` only if the fixed pattern did not compile, which its tests rule out.
fn shapes_text() -> Option<&'static regex::Regex> {
    static SHAPES: OnceLock<Option<regex::Regex>> = OnceLock::new();
    SHAPES
        .get_or_init(|| regex::Regex::new(&shapes_pattern()).ok())
        .as_ref()
}

/// The shapes as a byte regex, for content that is not UTF-8.
fn shapes_bytes() -> Option<&'static regex::bytes::Regex> {
    static SHAPES: OnceLock<Option<regex::bytes::Regex>> = OnceLock::new();
    SHAPES
        .get_or_init(|| regex::bytes::Regex::new(&shapes_pattern()).ok())
        .as_ref()
}

/// The shape whose group matched.
fn matched_shape(groups: impl Fn(usize) -> bool) -> TokenShape {
    TokenShape::ALL
        .iter()
        .enumerate()
        .find(|(i, _)| groups(i + 1))
        .map_or(TokenShape::ApiKey, |(_, shape)| *shape)
}

/// The label that replaces a secret: `[redacted:NAME]`.
pub fn label(name: &str) -> String {
    format!("[redacted:{name}]")
}

/// One known secret value and the name it is shown by.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Secret {
    name: String,
    value: String,
    label: String,
}

/// Replaces known secret values and well-known token shapes in text, JSON and bytes. Cheap to clone; pure.
#[derive(Clone)]
pub struct Redactor {
    // Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<Secret>,
    /// What [`Redactor::may_redact_json`] looks for, made at its first use after the secrets last changed.
    clues: Arc<OnceLock<Option<regex::bytes::Regex>>>,
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.secrets == other.secrets
    }
}

impl Eq for Redactor {}

/// The JSON escapes that can spell any character in others (`\u0073k-…` is `sk-…` once parsed, and `\/` a
/// `/`): a text with either is redacted the slow way.
const SPELLING_ESCAPES: [&str; 2] = ["\\u", "\\/"];

impl std::fmt::Debug for Redactor {
    // Never the values themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.secrets.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("Redactor").field("secrets", &names).finish()
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::shapes_only()
    }
}

impl Redactor {
    /// A redactor that knows no values: token shapes only.
    pub fn shapes_only() -> Self {
        Redactor {
            secrets: Vec::new(),
            clues: Arc::default(),
        }
    }

    /// Redacts each `(name, value)` given, whatever the name (values shorter than [`MIN_SECRET_LEN`]
    /// characters excepted), and the token shapes. A value with surrounding white space is also redacted
    /// trimmed (a key read from a file keeps its newline).
    pub fn new(secrets: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut out = Self::shapes_only();
        for (name, value) in secrets {
            out.add(&name, &value);
        }
        out
    }

    /// Redacts the values of `env`'s variables whose names look secret ([`looks_secret`]) or are among
    /// `also`, and the token shapes.
    pub fn from_env(env: impl IntoIterator<Item = (String, String)>, also: &[String]) -> Self {
        Self::new(
            env.into_iter()
                .filter(|(name, _)| looks_secret(name) || also.iter().any(|a| a == name)),
        )
    }

    /// [`Redactor::from_env`] over this process's environment (variables that are not UTF-8 are skipped:
    /// no text agency records can contain them whole).
    pub fn from_process_env(also: &[String]) -> Self {
        Self::from_env(
            std::env::vars_os().filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?))),
            also,
        )
    }

    /// Also redacts `value`, shown as `name` (unless it is shorter than [`MIN_SECRET_LEN`] characters).
    pub fn add(&mut self, name: &str, value: &str) {
        for candidate in [value, value.trim()] {
            if candidate.chars().count() < MIN_SECRET_LEN || self.secrets.iter().any(|s| s.value == candidate)
            {
                continue;
            }
            self.secrets.push(Secret {
                name: name.to_string(),
                value: candidate.to_string(),
                label: label(name),
            });
        }
        self.secrets.sort_by(|a, b| {
            b.value
                .len()
                .cmp(&a.value.len())
                .then_with(|| a.name.cmp(&b.name))
        });
        self.clues = Arc::default();
    }

    /// The names of the values it redacts (for a log line saying what is covered; never the values).
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.secrets.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// `text` with every known value and token shape replaced; borrowed when nothing was.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.value.as_str()) {
                out = Cow::Owned(out.replace(secret.value.as_str(), &secret.label));
            }
        }
        let Some(shapes) = shapes_text() else {
            return out;
        };
        if !shapes.is_match(&out) {
            return out;
        }
        let replaced = shapes
            .replace_all(&out, |caps: &regex::Captures<'_>| {
                label(matched_shape(|i| caps.get(i).is_some()).label())
            })
            .into_owned();
        Cow::Owned(replaced)
    }

    /// `bytes` redacted: as text when they are UTF-8, byte for byte otherwise.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return match self.redact(text) {
                Cow::Borrowed(_) => Cow::Borrowed(bytes),
                Cow::Owned(text) => Cow::Owned(text.into_bytes()),
            };
        }
        let mut out = Cow::Borrowed(bytes);
        for secret in &self.secrets {
            if let Some(replaced) = replace_bytes(&out, secret.value.as_bytes(), secret.label.as_bytes()) {
                out = Cow::Owned(replaced);
            }
        }
        let Some(shapes) = shapes_bytes() else {
            return out;
        };
        if !shapes.is_match(&out) {
            return out;
        }
        let replaced = shapes
            .replace_all(&out, |caps: &regex::bytes::Captures<'_>| {
                label(matched_shape(|i| caps.get(i).is_some()).label()).into_bytes()
            })
            .into_owned();
        Cow::Owned(replaced)
    }

    /// Redacts every string in `value` (object keys too) in place; whether anything changed.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => match self.redact(text) {
                Cow::Borrowed(_) => false,
                Cow::Owned(redacted) => {
                    *text = redacted;
                    true
                }
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.redact_json(item) | changed),
            Value::Object(map) => {
                let mut changed = false;
                let keys_change = map.keys().any(|k| matches!(self.redact(k), Cow::Owned(_)));
                if keys_change {
                    let old = std::mem::take(map);
                    for (key, item) in old {
                        map.insert(self.redact(&key).into_owned(), item);
                    }
                    changed = true;
                }
                for item in map.values_mut() {
                    changed |= self.redact_json(item);
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// Whether [`Redactor::redact_json`] could replace anything in the document `json` is the text of, or
    /// [`Redactor::redact_bytes`] anything in `json` itself: `false` only when neither could, so that a
    /// caller may skip parsing it. It looks for every secret as written and as JSON escapes it, the literal
    /// start of every token shape, and the escapes that can spell a character in others (`\u`, `\/`); one
    /// scan of the bytes. `true` means "look closer", not "found".
    ///
    /// Why that is enough: in JSON text without `\u` or `\/` a character of a string is either itself or
    /// (`"`, `\` and the control characters) the one escape serde_json writes for it, so a parsed string
    /// holds a secret only where the text holds its escaped form, and the start of a token shape (letters,
    /// digits, `-` and `_`, never escaped) only where the text holds it too.
    pub fn may_redact_json(&self, json: &[u8]) -> bool {
        let clues = self.clues.get_or_init(|| {
            let mut needles: Vec<String> = Vec::new();
            for secret in &self.secrets {
                needles.push(secret.value.clone());
                let escaped = serde_json::to_string(&secret.value).unwrap_or_default();
                let escaped = escaped
                    .strip_prefix('"')
                    .and_then(|e| e.strip_suffix('"'))
                    .unwrap_or(&escaped);
                if escaped != secret.value {
                    needles.push(escaped.to_owned());
                }
            }
            needles.extend(
                TokenShape::ALL
                    .iter()
                    .flat_map(|shape| shape.starts())
                    .map(|start| (*start).to_owned()),
            );
            let pattern = needles
                .iter()
                .map(String::as_str)
                .chain(SPELLING_ESCAPES)
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join("|");
            regex::bytes::Regex::new(&pattern).ok()
        });
        // A pattern that could not be made (too large, say) finds everything: the slow way is always right.
        clues.as_ref().is_none_or(|clues| clues.is_match(json))
    }

    /// Whether `text` holds anything this redactor would replace.
    pub fn finds_secret(&self, text: &str) -> bool {
        matches!(self.redact(text), Cow::Owned(_))
    }
}

/// `haystack` with every `needle` replaced by `with`; `None` when there is none.
fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    let mut found = false;
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        found = true;
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn secret_looking_names() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "MY_SERVICE_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "GH_PAT",
            "client_secret",
            "SLACK_BOT_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_PRIVATE_KEY",
            "STRIPE_KEY",
            "SMTP_PASS",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD_LAYOUT",
            "SSH_AUTH_SOCK",
            "LANG",
            "MONKEYS",
            "TERM",
            "PATHS",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn held_values_are_replaced_by_their_names_and_short_ones_are_not() {
        let redactor = Redactor::from_env(
            env(&[
                ("ANTHROPIC_API_KEY", "sk-ant-0123456789abcdefghij"),
                ("MY_SERVICE_TOKEN", "q8Zr2LmN4vX"),
                ("PATH", "/usr/bin:/bin"),
                ("DB_PASSWORD", "short"),
                ("LLM", "plainvalue42"),
            ]),
            &["LLM".to_string()],
        );
        assert_eq!(
            redactor.redact("a sk-ant-0123456789abcdefghij b q8Zr2LmN4vX c /usr/bin:/bin short plainvalue42"),
            "a [redacted:ANTHROPIC_API_KEY] b [redacted:MY_SERVICE_TOKEN] c /usr/bin:/bin short [redacted:LLM]"
        );
        assert_eq!(redactor.names(), ["ANTHROPIC_API_KEY", "LLM", "MY_SERVICE_TOKEN"]);
        assert!(matches!(redactor.redact("nothing here"), Cow::Borrowed(_)));
        assert!(!format!("{redactor:?}").contains("q8Zr2LmN4vX"));
    }

    #[test]
    fn a_value_read_with_its_newline_is_redacted_trimmed_too() {
        let redactor = Redactor::new(env(&[("KEY_FILE_TOKEN", "abcdefgh1234\n")]));
        assert_eq!(
            redactor.redact("x abcdefgh1234 y"),
            "x [redacted:KEY_FILE_TOKEN] y"
        );
    }

    #[test]
    fn a_secret_containing_another_is_replaced_whole() {
        let redactor = Redactor::new(env(&[("A_TOKEN", "abcdefgh"), ("B_TOKEN", "abcdefgh-and-more")]));
        assert_eq!(
            redactor.redact("abcdefgh-and-more abcdefgh"),
            "[redacted:B_TOKEN] [redacted:A_TOKEN]"
        );
    }

    #[test]
    fn token_shapes_are_redacted_even_when_not_held() {
        let redactor = Redactor::shapes_only();
        let cases = [
            (
                "key sk-proj-AbCdEfGhIjKlMnOpQrStUv12 end",
                "key [redacted:api-key] end",
            ),
            (
                "export GH=ghp_0123456789abcdefghijABCDEFGHIJ012345;",
                "export GH=[redacted:github-token];",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghij",
                "[redacted:github-token]",
            ),
            ("slack xoxb-1234567890-abcdefghij", "slack [redacted:slack-token]"),
            ("id AKIAIOSFODNN7EXAMPLE.", "id [redacted:aws-access-key]."),
            (
                "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\ny",
                "x\n[redacted:private-key]\ny",
            ),
            (
                "cut -----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn",
                "cut [redacted:private-key]",
            ),
        ];
        for (text, redacted) in cases {
            assert_eq!(redactor.redact(text), redacted, "{text}");
            // What a shape's pattern matches, the quick check does not clear.
            let json = serde_json::to_vec(&json!({ "text": text })).unwrap();
            assert!(redactor.may_redact_json(&json), "{text}");
        }
        for ordinary in [
            "task-implement_the_fancy_feature_now",
            "sk-short",
            "risk-free",
            "AKIA is a prefix",
            "-----BEGIN CERTIFICATE-----",
            "ghp_short",
        ] {
            assert_eq!(redactor.redact(ordinary), ordinary);
        }
    }

    #[test]
    fn json_strings_and_keys_are_redacted_in_place() {
        let redactor = Redactor::new(env(&[("MY_TOKEN", "tok-123456789")]));
        let mut value = json!({
            "summary": "printed tok-123456789",
            "nested": [{"argv": ["echo", "tok-123456789"]}, 3, null, true],
            "tok-123456789": "as a key",
        });
        assert!(redactor.redact_json(&mut value));
        assert_eq!(
            value,
            json!({
                "summary": "printed [redacted:MY_TOKEN]",
                "nested": [{"argv": ["echo", "[redacted:MY_TOKEN]"]}, 3, null, true],
                "[redacted:MY_TOKEN]": "as a key",
            })
        );
        assert!(!redactor.redact_json(&mut value));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_redacted_byte_for_byte() {
        let redactor = Redactor::new(env(&[("MY_TOKEN", "tok-123456789")]));
        let mut bytes = vec![0xff, 0xfe];
        bytes.extend_from_slice(b"tok-123456789 and AKIAIOSFODNN7EXAMPLE");
        let out = redactor.redact_bytes(&bytes);
        assert_eq!(&out[..2], [0xff, 0xfe]);
        assert_eq!(&out[2..], b"[redacted:MY_TOKEN] and [redacted:aws-access-key]");
        assert!(matches!(redactor.redact_bytes(b"plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_that_may_hold_a_secret_is_told_from_json_that_cannot() {
        let quoted = r#"q"uo\te-1234"#;
        let mut redactor = Redactor::new(env(&[("MY_TOKEN", "tok-123456789")]));
        let text = |value: serde_json::Value| serde_json::to_vec(&value).unwrap();
        let plain = text(json!({"summary": "all good", "files": ["a.rs", "b/c.rs"], "n": 3}));
        assert!(!redactor.may_redact_json(&plain));
        let maybe = [
            text(json!({"summary": "printed tok-123456789"})),
            text(json!({"tok-123456789": 1})),
            text(json!({"key": "sk-ant-0123456789abcdefghij"})),
            text(json!({"key": "ghp_0123456789abcdefghij0123"})),
            text(json!({"key": "github_pat_0123456789abcdefghij"})),
            text(json!({"key": "xoxb-0123456789"})),
            text(json!({"key": "AKIAIOSFODNN7EXAMPLE", "also": "ASIA"})),
            text(json!({"pem": "-----BEGIN RSA PRIVATE KEY-----\nMII"})),
            // A writer other than serde_json may spell any character as a `\u` escape, and `/` as `\/`.
            br#"{"key": "\u0073k-ant-0123456789abcdefghij"}"#.to_vec(),
            br#"{"path": "a\/b"}"#.to_vec(),
        ];
        for json in &maybe {
            assert!(
                redactor.may_redact_json(json),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
        // A secret with a quote and a backslash is looked for as JSON writes it, and found after `add`.
        let escaped = text(json!({"summary": format!("printed {quoted}")}));
        assert!(!redactor.may_redact_json(&escaped));
        redactor.add("QUOTED_TOKEN", quoted);
        assert!(redactor.may_redact_json(&escaped));
        let mut value: serde_json::Value = serde_json::from_slice(&escaped).unwrap();
        assert!(redactor.redact_json(&mut value));
    }

    proptest! {
        /// A held secret never survives redaction, wherever it is put in whatever text.
        #[test]
        fn a_held_secret_never_survives(
            secret in "[0-9][A-Za-z0-9_\\-]{7,39}",
            before in "\\PC{0,40}",
            after in "\\PC{0,40}",
        ) {
            let redactor = Redactor::new([("SOME_TOKEN".to_string(), secret.clone())]);
            let text = format!("{before}{secret}{after}");
            let redacted = redactor.redact(&text);
            prop_assert!(!redacted.contains(&secret), "{redacted}");
            prop_assert!(redacted.contains("[redacted:SOME_TOKEN]"));
            let bytes = redactor.redact_bytes(text.as_bytes());
            prop_assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
        }

        /// Text holding no secret and no token shape comes back unchanged.
        #[test]
        fn ordinary_text_is_left_alone(text in "[a-z .,\\n]{0,200}") {
            let redactor = Redactor::new([("SOME_TOKEN".to_string(), "Z9Z9Z9Z9Z9".to_string())]);
            prop_assert!(matches!(redactor.redact(&text), Cow::Borrowed(_)));
        }

        /// Where `may_redact_json` says a JSON text holds nothing to redact, redacting its document or its
        /// bytes indeed changes nothing: the check may say "look closer" too often, never too seldom.
        #[test]
        fn json_said_to_hold_nothing_holds_nothing(
            secret in "[0-9][A-Za-z0-9\"\\\\\n/]{7,19}",
            parts in proptest::collection::vec(
                prop_oneof![
                    "\\PC{0,20}",
                    "[ \"\\\\\n\t/a-z]{0,12}",
                    Just("sk-0123456789abcdefghijkl".to_string()),
                    Just("AKIAIOSFODNN7EXAMPLE".to_string()),
                    Just("\n-----BEGIN PRIVATE KEY-----".to_string()),
                ],
                1..6,
            ),
            with_secret in proptest::bool::ANY,
        ) {
            let redactor = Redactor::new([("SOME_TOKEN".to_string(), secret.clone())]);
            let mut strings = parts;
            if with_secret {
                strings.push(format!("x{secret}y"));
            }
            let document = json!({ "parts": strings.clone(), strings.concat(): strings.len() });
            let text = serde_json::to_vec(&document).unwrap();
            if !redactor.may_redact_json(&text) {
                let mut parsed = document.clone();
                prop_assert!(!redactor.redact_json(&mut parsed));
                prop_assert!(matches!(redactor.redact_bytes(&text), Cow::Borrowed(_)));
            }
            if with_secret {
                prop_assert!(redactor.may_redact_json(&text));
            }
        }

        /// Redacting twice is redacting once.
        #[test]
        fn redaction_is_idempotent(text in "\\PC{0,80}", secret in "[0-9][A-Za-z0-9]{7,19}") {
            let redactor = Redactor::new([("SOME_TOKEN".to_string(), secret.clone())]);
            let text = format!("{text}{secret}sk-{secret}{secret}{secret}");
            let once = redactor.redact(&text).into_owned();
            prop_assert_eq!(redactor.redact(&once).into_owned(), once);
        }
    }
}
