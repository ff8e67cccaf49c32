//! The talent pool: agency-agents style personalities and the role registry that picks one per tier and
//! domain.
//!
//! A personality is a markdown file: YAML front matter (`name`, `description`, `color` required; `emoji`,
//! `vibe`, `tools`, `services` optional) and a body that becomes the agent's system prompt. A directory of
//! them (an agency-agents checkout, division folders and all) is loaded recursively and keyed by file slug
//! (`engineering/engineering-software-architect.md` → `engineering-software-architect`); markdown files
//! without front matter (READMEs) are skipped. agency ships one default personality per tier, of its own
//! writing, used when no directory is configured and for any tier and domain the registry does not name.
//!
//! [`Personalities::check`] is the start-up check: every slug the registry names must exist, and an
//! unknown one is an error listing the closest existing names.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use agency_core::Tier;
use agency_core::config::PersonalitiesConfig;
use serde::Deserialize;

/// One personality.
#[derive(Debug, Clone, PartialEq)]
pub struct Personality {
    /// Its file slug.
    pub slug: String,
    /// Its display name.
    pub name: String,
    /// What it is for, in a sentence.
    pub description: String,
    /// Its colour in the dashboard and log.
    pub color: String,
    /// An emoji for the log.
    pub emoji: Option<String>,
    /// A one-line character note.
    pub vibe: Option<String>,
    /// Tools it expects, as written (informational: the runtime decides what the agent may call).
    pub tools: Option<serde_json::Value>,
    /// Services it expects, as written.
    pub services: Option<serde_json::Value>,
    /// The system prompt.
    pub prompt: String,
    /// Where it came from (a file, or `built-in`).
    pub source: String,
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    color: String,
    #[serde(default)]
    emoji: Option<String>,
    #[serde(default)]
    vibe: Option<String>,
    #[serde(default)]
    tools: Option<serde_json::Value>,
    #[serde(default)]
    services: Option<serde_json::Value>,
}

/// Why personalities could not be loaded or a name not resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersonalityError {
    /// A file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file or directory.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A file's front matter is malformed or lacks a required field.
    #[error("{path}: front matter: {message}")]
    FrontMatter {
        /// The file.
        path: String,
        /// What is wrong (the YAML error names the missing field).
        message: String,
    },
    /// Two files have the same slug.
    #[error("personality `{slug}` is defined twice: {first} and {second}")]
    Duplicate {
        /// The slug.
        slug: String,
        /// The first file.
        first: String,
        /// The second file.
        second: String,
    },
    /// Names that do not exist.
    #[error("{}", unknown_message(.0))]
    Unknown(Vec<UnknownName>),
}

/// A personality name that does not exist, where it was named and what might have been meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// Where it was named (`personalities.registry.t4.backend`, `brief`).
    pub at: String,
    /// The name as written.
    pub slug: String,
    /// Existing names closest to it, closest first.
    pub closest: Vec<String>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: unknown personality `{}`", self.at, self.slug)?;
        if !self.closest.is_empty() {
            write!(f, " (closest: {})", self.closest.join(", "))?;
        }
        Ok(())
    }
}

fn unknown_message(names: &[UnknownName]) -> String {
    names
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `source` of agency's own personalities.
const BUILT_IN: &str = "built-in";

/// agency's own default personalities, one per tier.
const DEFAULTS: [(Tier, &str, &str); 5] = [
    (
        Tier::T1,
        "agency-visionary",
        include_str!("../../personalities/agency-visionary.md"),
    ),
    (
        Tier::T2,
        "agency-architect",
        include_str!("../../personalities/agency-architect.md"),
    ),
    (
        Tier::T3,
        "agency-squad-lead",
        include_str!("../../personalities/agency-squad-lead.md"),
    ),
    (
        Tier::T4,
        "agency-implementer",
        include_str!("../../personalities/agency-implementer.md"),
    ),
    (
        Tier::T5,
        "agency-verifier",
        include_str!("../../personalities/agency-verifier.md"),
    ),
];

/// Every loaded personality plus the registry that assigns them.
#[derive(Debug, Clone)]
pub struct Personalities {
    by_slug: BTreeMap<String, Personality>,
    registry: BTreeMap<Tier, BTreeMap<String, String>>,
    uses_registry: bool,
}

impl Personalities {
    /// agency's defaults only; the registry is not used (it names agency-agents personalities).
    pub fn defaults() -> Self {
        let mut by_slug = BTreeMap::new();
        for (_, slug, text) in DEFAULTS {
            // The defaults are compiled in and pinned by a test, so a parse failure cannot reach users.
            if let Ok(p) = parse(slug, text, BUILT_IN) {
                by_slug.insert(slug.to_owned(), p);
            }
        }
        Self {
            by_slug,
            registry: BTreeMap::new(),
            uses_registry: false,
        }
    }

    /// The configured talent pool: the defaults plus every personality under `config.dir` (relative to
    /// `repo_root`), with the registry checked. Without a directory, only the defaults.
    pub fn from_config(config: &PersonalitiesConfig, repo_root: &Path) -> Result<Self, PersonalityError> {
        let mut pool = Self::defaults();
        let Some(dir) = &config.dir else {
            return Ok(pool);
        };
        let dir = repo_root.join(dir);
        let mut files = Vec::new();
        collect_markdown(&dir, &mut files)?;
        files.sort();
        let mut sources: BTreeMap<String, String> = BTreeMap::new();
        for file in files {
            let shown = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| PersonalityError::Read {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            let Some(slug) = file.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if front_matter(&text).is_none() {
                continue;
            }
            if let Some(first) = sources.insert(slug.to_owned(), shown.clone()) {
                return Err(PersonalityError::Duplicate {
                    slug: slug.to_owned(),
                    first,
                    second: shown,
                });
            }
            pool.by_slug.insert(slug.to_owned(), parse(slug, &text, &shown)?);
        }
        pool.registry = config.registry.clone();
        pool.uses_registry = true;
        pool.check()?;
        Ok(pool)
    }

    /// Checks every registry slug exists; the error lists each unknown one with the closest names.
    pub fn check(&self) -> Result<(), PersonalityError> {
        let unknown: Vec<UnknownName> = self
            .registry
            .iter()
            .flat_map(|(tier, domains)| domains.iter().map(move |(domain, slug)| (tier, domain, slug)))
            .filter(|(_, _, slug)| !self.by_slug.contains_key(slug.as_str()))
            .map(|(tier, domain, slug)| self.unknown(format!("personalities.registry.{tier}.{domain}"), slug))
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(PersonalityError::Unknown(unknown))
        }
    }

    /// How many personalities came from the configured folder rather than agency's own.
    pub fn from_folder(&self) -> usize {
        self.by_slug.values().filter(|p| p.source != BUILT_IN).count()
    }

    /// The personality called `slug`.
    pub fn get(&self, slug: &str) -> Option<&Personality> {
        self.by_slug.get(slug)
    }

    /// Every slug, sorted.
    pub fn slugs(&self) -> impl Iterator<Item = &str> {
        self.by_slug.keys().map(String::as_str)
    }

    /// agency's default personality for `tier`.
    pub fn tier_default(&self, tier: Tier) -> Option<&Personality> {
        DEFAULTS
            .iter()
            .find(|(t, _, _)| *t == tier)
            .and_then(|(_, slug, _)| self.by_slug.get(*slug))
    }

    /// Whether [`Personalities::for_brief`] looks at the domain for `tier`: only when the registry is in
    /// use and names personalities for that tier. Where it does not, a caller need not find the domain.
    pub fn reads_domain(&self, tier: Tier) -> bool {
        self.uses_registry
            && self
                .registry
                .get(&tier)
                .is_some_and(|domains| !domains.is_empty())
    }

    /// The personality for a brief: the one it names (an error when unknown), else the registry's for its
    /// tier and domain, else the tier's default.
    pub fn for_brief(
        &self,
        tier: Tier,
        domain: &str,
        named: Option<&str>,
    ) -> Result<Option<&Personality>, PersonalityError> {
        if let Some(slug) = named {
            return self
                .get(slug)
                .map(Some)
                .ok_or_else(|| PersonalityError::Unknown(vec![self.unknown("brief".to_owned(), slug)]));
        }
        let registered = self
            .uses_registry
            .then(|| {
                self.registry
                    .get(&tier)
                    .and_then(|d| d.get(&domain.to_lowercase()))
            })
            .flatten()
            .and_then(|slug| self.get(slug));
        Ok(registered.or_else(|| self.tier_default(tier)))
    }

    fn unknown(&self, at: String, slug: &str) -> UnknownName {
        UnknownName {
            at,
            slug: slug.to_owned(),
            closest: closest(slug, self.slugs(), 3),
        }
    }
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), PersonalityError> {
    let entries = std::fs::read_dir(dir).map_err(|e| PersonalityError::Read {
        path: dir.display().to_string(),
        message: format!("cannot read the personalities directory: {e}"),
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        match entry.file_type() {
            Ok(t) if t.is_dir() && !hidden => collect_markdown(&path, out)?,
            Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "md") => out.push(path),
            _ => {}
        }
    }
    Ok(())
}

/// The YAML between the opening and closing `---` lines, and the body after it.
fn front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.find("\n---")?;
    let yaml = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map_or("", |(_, body)| body);
    Some((yaml, body))
}

/// Parses one personality file.
pub fn parse(slug: &str, text: &str, source: &str) -> Result<Personality, PersonalityError> {
    let bad = |message: String| PersonalityError::FrontMatter {
        path: source.to_owned(),
        message,
    };
    let (yaml, body) =
        front_matter(text).ok_or_else(|| bad("expected a `---` block at the top".to_owned()))?;
    let meta: FrontMatter = serde_saphyr::from_str(yaml).map_err(|e| bad(e.to_string()))?;
    for (field, value) in [
        ("name", &meta.name),
        ("description", &meta.description),
        ("color", &meta.color),
    ] {
        if value.trim().is_empty() {
            return Err(bad(format!("`{field}` must not be empty")));
        }
    }
    Ok(Personality {
        slug: slug.to_owned(),
        name: meta.name,
        description: meta.description,
        color: meta.color,
        emoji: meta.emoji,
        vibe: meta.vibe,
        tools: meta.tools,
        services: meta.services,
        prompt: body.trim().to_owned(),
        source: source.to_owned(),
    })
}

/// Up to `n` names closest to `wanted` by edit distance, closest first; only names within a distance that
/// could plausibly be a typo (a third of the length, at least 3) or that contain the wanted name.
pub fn closest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>, n: usize) -> Vec<String> {
    let limit = (wanted.chars().count() / 3).max(3);
    let mut scored: Vec<(usize, &str)> = names
        .map(|name| (edit_distance(wanted, name), name))
        .filter(|(d, name)| *d <= limit || name.contains(wanted) || wanted.contains(*name))
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(n)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
