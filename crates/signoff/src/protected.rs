//! Protected paths: the files an agent could change to make a failing check pass without doing the work.
//! Edits to them since the goal started reject a sign-off on their own, whatever the judge thinks, unless
//! the contract's `may_edit:` authorises the path (see [`crate::glob`]).
//!
//! The kinds:
//! - **agency's own configuration**: anything under `.agency/` (team.yaml, its personalities): an agent that
//!   rewrites it could turn the teachback gate off or add a notifier that runs a shell;
//! - **the agents' client configuration and instructions**: `.claude/`, `.codex/`, `.pi/` at any depth,
//!   `CLAUDE.md`, `CLAUDE.local.md`, `AGENTS.md`, `AGENTS.override.md`: an agent rewriting its own hooks or
//!   instructions, or the next agent's;
//! - **CI and git-hook configuration**: `.github/workflows/`, `.github/actions/`, `.gitlab-ci.yml`,
//!   `.gitlab/`, `.ci/`, `.circleci/`, `.buildkite/`, `Jenkinsfile`, `.travis.yml`, `azure-pipelines.yml`,
//!   `bitbucket-pipelines.yml`, `.drone.yml`, `.pre-commit-config.yaml`, `.husky/`, `.githooks/`,
//!   `.git-hooks/`, `lefthook.yml`: code that runs with the repository's credentials once merged;
//! - **test files**: anything under a `tests/`, `test/`, `__tests__/` or `spec/` directory, and files named
//!   `test_*`, `*_test.*`, `*_tests.*`, `*_spec.*`, `*.test.*`, `*.spec.*`, or `conftest.py`;
//! - **the verify command's own files**: every argument of the verify argv (the program too, when it is a
//!   path) that names a file or directory in the checkout, and what the tools it starts load from the
//!   checkout without being named ([`crate::runners`]: a module that shadows one the tests import,
//!   `node_modules/`, makefiles, `build.rs`, `rust-toolchain`), the tools read from the argv and from the
//!   scripts it names;
//! - **test-runner configuration**, whole files: `pytest.ini`, `tox.ini`, `noxfile.py`, `.coveragerc`,
//!   `sitecustomize.py`, `usercustomize.py`, `*.pth`, `jest.config.*`, `vitest.config.*`, `karma.conf.*`,
//!   `.mocharc*`, `phpunit.xml*`, `.rspec`, `.cargo/config*`, `.config/nextest.toml`, `.npmrc`, `.yarnrc*`,
//!   `.pnpmfile.cjs`, `bunfig.toml`; and the runner sections of shared manifests, so a fix may still add a
//!   dependency: `setup.cfg` `[tool:pytest]`/`[coverage:*]`, `pyproject.toml`
//!   `[tool.pytest*]`/`[tool.tox*]`/`[tool.coverage*]`, `Cargo.toml` `[dev-dependencies]` (any target's),
//!   `[[test]]`, `[profile.test]`, `[patch.*]`, `[replace]`, and `package.json`'s `test*` scripts (every
//!   script when the verify command runs a node tool) and its `jest`/`mocha`/`ava`/`vitest` keys.
//!
//! Beside these rules, the sign-off rejects a committed symbolic link that points outside the repository
//! (see `pipeline::protected_edits`); no `may_edit:` authorises one.

use std::path::Path;

use serde_json::Value;

use crate::runners::Runners;

/// Why a path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protection {
    /// A test file.
    TestFile,
    /// A file the verify command runs or reads.
    VerifyScript,
    /// Test-runner configuration.
    RunnerConfig,
    /// agency's own configuration (`.agency/`).
    AgencyConfig,
    /// An agent client's configuration or instructions (`.claude/`, `AGENTS.md`, ...).
    AgentConfig,
    /// CI or git-hook configuration.
    CiConfig,
    /// A symbolic link to a place outside the repository.
    EscapingSymlink,
}

impl Protection {
    /// How the rejection names it.
    pub fn describe(self) -> &'static str {
        match self {
            Protection::TestFile => "a test file",
            Protection::VerifyScript => "part of the verify command",
            Protection::RunnerConfig => "test-runner configuration",
            Protection::AgencyConfig => "agency's own configuration",
            Protection::AgentConfig => "an agent's configuration or instructions",
            Protection::CiConfig => "CI or git-hook configuration",
            Protection::EscapingSymlink => "a symbolic link out of the repository",
        }
    }
}

/// A shared manifest of which only some parts are protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sections {
    /// `setup.cfg`.
    SetupCfg,
    /// `pyproject.toml`.
    Pyproject,
    /// `Cargo.toml`.
    CargoToml,
    /// `package.json`: its `test*` scripts and test-runner keys.
    PackageJson,
    /// `package.json` when the verify command runs a node tool: every script, and the test-runner keys.
    PackageJsonScripts,
}

/// What the rules say about one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any change to the file is a protected edit.
    Whole(Protection),
    /// Only changes to some sections are.
    Sections(Sections),
}

/// The protected-path rules for one contract's verify command.
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    verify_paths: Vec<String>,
    runners: Runners,
}

impl ProtectedPaths {
    /// The rules for a verify argv; `exists` says whether a repository-relative path names a file or
    /// directory (in the commit under review or at the goal's base: deleting the script counts too), and
    /// `read` gives the texts of such a file (at the base and in the commit), whose words say which tools
    /// the command starts.
    pub fn for_verify(
        argv: &[String],
        exists: &dyn Fn(&str) -> bool,
        read: &dyn Fn(&str) -> Vec<String>,
    ) -> Self {
        let mut verify_paths = Vec::new();
        for (i, word) in argv.iter().enumerate() {
            // The program counts only as a path (`./verify.sh`), not as a name looked up on PATH.
            if (i == 0 && !word.contains('/')) || word.starts_with('-') || word.is_empty() {
                continue;
            }
            let relative = word.trim_start_matches("./").trim_end_matches('/');
            if relative.is_empty()
                || Path::new(relative).is_absolute()
                || relative.split('/').any(|s| s == "..")
            {
                continue;
            }
            if exists(relative) {
                verify_paths.push(relative.to_string());
            }
        }
        let scripts: Vec<String> = verify_paths.iter().flat_map(|path| read(path)).collect();
        let runners = Runners::of(
            argv.iter()
                .map(String::as_str)
                .chain(scripts.iter().map(String::as_str)),
        );
        ProtectedPaths {
            verify_paths,
            runners,
        }
    }

    /// The verify command's own files and directories found in the checkout.
    pub fn verify_paths(&self) -> &[String] {
        &self.verify_paths
    }

    /// The rule for `path` (repository-relative, `/`-separated), if it is protected at all.
    pub fn rule(&self, path: &str) -> Option<Rule> {
        let name = path.rsplit('/').next().unwrap_or(path);
        if let Some(control) = control_file(path, name) {
            return Some(Rule::Whole(control));
        }
        if self
            .verify_paths
            .iter()
            .any(|v| path == v || path.starts_with(&format!("{v}/")))
            || self.runners.steers(path, name)
        {
            return Some(Rule::Whole(Protection::VerifyScript));
        }
        if is_test_file(path, name) {
            return Some(Rule::Whole(Protection::TestFile));
        }
        if is_runner_config(path, name) {
            return Some(Rule::Whole(Protection::RunnerConfig));
        }
        match name {
            "setup.cfg" => Some(Rule::Sections(Sections::SetupCfg)),
            "pyproject.toml" => Some(Rule::Sections(Sections::Pyproject)),
            "Cargo.toml" => Some(Rule::Sections(Sections::CargoToml)),
            "package.json" if self.runners.all_package_scripts() => {
                Some(Rule::Sections(Sections::PackageJsonScripts))
            }
            "package.json" => Some(Rule::Sections(Sections::PackageJson)),
            _ => None,
        }
    }
}

/// Whether `path` is agency's, an agent client's, or CI's control file, and which.
fn control_file(path: &str, name: &str) -> Option<Protection> {
    let mut dirs = path.split('/').rev().skip(1);
    if path.split('/').next() == Some(".agency") {
        return Some(Protection::AgencyConfig);
    }
    if dirs.any(|d| matches!(d, ".claude" | ".codex" | ".pi"))
        || matches!(
            name,
            "CLAUDE.md" | "CLAUDE.local.md" | "AGENTS.md" | "AGENTS.override.md"
        )
    {
        return Some(Protection::AgentConfig);
    }
    let ci_dirs = [
        ".github/workflows/",
        ".github/actions/",
        ".gitlab/",
        ".ci/",
        ".circleci/",
        ".buildkite/",
        ".husky/",
        ".githooks/",
        ".git-hooks/",
    ];
    let ci_files = [
        ".gitlab-ci.yml",
        ".gitlab-ci.yaml",
        "Jenkinsfile",
        ".travis.yml",
        "azure-pipelines.yml",
        "bitbucket-pipelines.yml",
        ".drone.yml",
        ".pre-commit-config.yaml",
        "lefthook.yml",
        "lefthook.yaml",
        ".lefthook.yml",
    ];
    if ci_dirs.iter().any(|dir| path.starts_with(dir)) || ci_files.contains(&path) {
        return Some(Protection::CiConfig);
    }
    None
}

fn is_test_file(path: &str, name: &str) -> bool {
    let mut dirs = path.split('/').rev().skip(1);
    if dirs.any(|d| matches!(d, "tests" | "test" | "__tests__" | "spec")) {
        return true;
    }
    let stem = name.split('.').next().unwrap_or(name);
    name == "conftest.py"
        || name.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
}

fn is_runner_config(path: &str, name: &str) -> bool {
    matches!(
        name,
        "pytest.ini"
            | "tox.ini"
            | "noxfile.py"
            | ".coveragerc"
            | "sitecustomize.py"
            | "usercustomize.py"
            | ".rspec"
            | ".npmrc"
            | ".pnpmfile.cjs"
            | "bunfig.toml"
    ) || name.ends_with(".pth")
        || name.starts_with(".yarnrc")
        || [
            "jest.config.",
            "vitest.config.",
            "karma.conf.",
            ".mocharc",
            "phpunit.xml",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || path.starts_with(".cargo/config")
        || path.contains("/.cargo/config")
        || path.ends_with(".config/nextest.toml")
}

impl Sections {
    /// Whether the protected parts differ between two versions of the file (`None`: absent).
    pub fn changed(self, old: Option<&str>, new: Option<&str>) -> bool {
        match self {
            Sections::PackageJson => package_json_part(old, false) != package_json_part(new, false),
            Sections::PackageJsonScripts => package_json_part(old, true) != package_json_part(new, true),
            _ => {
                let keep = |name: &str| self.protects(name);
                // A file that is absent has no protected sections, like an empty one.
                ini_sections(old.unwrap_or(""), &keep) != ini_sections(new.unwrap_or(""), &keep)
            }
        }
    }

    fn protects(self, section: &str) -> bool {
        match self {
            Sections::SetupCfg => section == "tool:pytest" || section.starts_with("coverage:"),
            Sections::Pyproject => {
                section.starts_with("tool.pytest")
                    || section.starts_with("tool.tox")
                    || section.starts_with("tool.coverage")
            }
            Sections::CargoToml => {
                section == "dev-dependencies"
                    || section.ends_with(".dev-dependencies")
                    || section.starts_with("dev-dependencies.")
                    || section == "test"
                    || section == "profile.test"
                    || section == "patch"
                    || section.starts_with("patch.")
                    || section == "replace"
            }
            Sections::PackageJson | Sections::PackageJsonScripts => false,
        }
    }
}

/// The lines of the sections `keep` selects, with their headers; comments and blank lines dropped so a
/// reformat elsewhere does not count.
fn ini_sections(text: &str, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let name = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            inside = keep(name);
        }
        if inside && !trimmed.is_empty() && !trimmed.starts_with('#') && !trimmed.starts_with(';') {
            out.push(trimmed.to_string());
        }
    }
    out
}

/// `package.json`'s test scripts (every script with `all_scripts`) and test-runner keys; the whole text
/// when it does not parse, so a broken manifest is never waved through.
fn package_json_part(text: Option<&str>, all_scripts: bool) -> Value {
    let Some(text) = text else {
        return Value::Object(serde_json::Map::new());
    };
    let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) else {
        return Value::String(text.to_string());
    };
    let mut part = serde_json::Map::new();
    if let Some(Value::Object(scripts)) = doc.get("scripts") {
        for (name, value) in scripts {
            if all_scripts
                || name.starts_with("test")
                || name.starts_with("pretest")
                || name.starts_with("posttest")
            {
                part.insert(format!("scripts.{name}"), value.clone());
            }
        }
    }
    for key in ["jest", "mocha", "ava", "vitest"] {
        if let Some(value) = doc.get(key) {
            part.insert(key.to_string(), value.clone());
        }
    }
    Value::Object(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ProtectedPaths {
        ProtectedPaths::default()
    }

    #[test]
    fn test_files_are_recognised_by_directory_and_name() {
        for path in [
            "tests/test_calc.py",
            "pkg/tests/helpers.py",
            "test/a.c",
            "web/__tests__/a.js",
            "spec/models/user_spec.rb",
            "test_calc.py",
            "calc_test.go",
            "src/calc_tests.rs",
            "src/app.test.ts",
            "src/app.spec.js",
            "conftest.py",
            "pkg/conftest.py",
        ] {
            assert_eq!(
                rules().rule(path),
                Some(Rule::Whole(Protection::TestFile)),
                "{path}"
            );
        }
        for path in [
            "calc.py",
            "src/latest.rs",
            "docs/testing.md",
            "contest.py",
            "attest.py",
        ] {
            assert_eq!(rules().rule(path), None, "{path}");
        }
    }

    #[test]
    fn runner_configuration_is_whole_file_or_by_section() {
        for path in [
            "pytest.ini",
            "tox.ini",
            "sitecustomize.py",
            "lib/x.pth",
            "jest.config.js",
            ".cargo/config.toml",
        ] {
            assert_eq!(
                rules().rule(path),
                Some(Rule::Whole(Protection::RunnerConfig)),
                "{path}"
            );
        }
        assert_eq!(
            rules().rule("pyproject.toml"),
            Some(Rule::Sections(Sections::Pyproject))
        );
        assert_eq!(
            rules().rule("crates/a/Cargo.toml"),
            Some(Rule::Sections(Sections::CargoToml))
        );
        assert_eq!(
            rules().rule("package.json"),
            Some(Rule::Sections(Sections::PackageJson))
        );
    }

    #[test]
    fn the_verify_commands_files_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("scripts")).unwrap();
        std::fs::write(dir.path().join("scripts/verify.sh"), "exit 1").unwrap();
        std::fs::create_dir_all(dir.path().join("checks")).unwrap();
        let argv: Vec<String> = ["sh", "scripts/verify.sh", "-x", "checks/", "missing.txt"]
            .map(String::from)
            .to_vec();
        let exists = |p: &str| dir.path().join(p).exists();
        let rules = ProtectedPaths::for_verify(&argv, &exists, &|_| Vec::new());
        assert_eq!(rules.verify_paths(), ["scripts/verify.sh", "checks"]);
        assert_eq!(
            rules.rule("scripts/verify.sh"),
            Some(Rule::Whole(Protection::VerifyScript))
        );
        assert_eq!(
            rules.rule("checks/a.py"),
            Some(Rule::Whole(Protection::VerifyScript))
        );
        assert_eq!(rules.rule("Makefile"), None);
        let make = ProtectedPaths::for_verify(&["make".to_string(), "test".to_string()], &exists, &|_| {
            Vec::new()
        });
        assert_eq!(make.rule("Makefile"), Some(Rule::Whole(Protection::VerifyScript)));
    }

    #[test]
    fn control_files_of_agency_the_agents_and_ci_are_protected() {
        let cases = [
            (".agency/team.yaml", Protection::AgencyConfig),
            (".agency/personalities/x.md", Protection::AgencyConfig),
            (".claude/settings.json", Protection::AgentConfig),
            ("web/.claude/commands/x.md", Protection::AgentConfig),
            (".codex/config.toml", Protection::AgentConfig),
            (".pi/agent/settings.json", Protection::AgentConfig),
            ("CLAUDE.md", Protection::AgentConfig),
            ("src/AGENTS.md", Protection::AgentConfig),
            (".github/workflows/ci.yml", Protection::CiConfig),
            (".github/actions/setup/action.yml", Protection::CiConfig),
            (".gitlab-ci.yml", Protection::CiConfig),
            (".ci/deploy.sh", Protection::CiConfig),
            (".pre-commit-config.yaml", Protection::CiConfig),
            (".husky/pre-commit", Protection::CiConfig),
            (".githooks/pre-push", Protection::CiConfig),
        ];
        for (path, protection) in cases {
            assert_eq!(rules().rule(path), Some(Rule::Whole(protection)), "{path}");
        }
        for path in [
            ".github/CODEOWNERS",
            ".github/ISSUE_TEMPLATE/bug.md",
            "docs/agency.md",
            "src/claude.rs",
            "README.md",
            "src/.agency/x",
        ] {
            assert_eq!(rules().rule(path), None, "{path}");
        }
    }

    #[test]
    fn what_the_verify_scripts_start_decides_what_else_is_theirs() {
        let exists = |p: &str| p == "scripts/verify.sh";
        let read = |_: &str| vec!["PYTHONPATH=. python3 -m unittest discover -s tests".to_string()];
        let argv = ["sh".to_string(), "scripts/verify.sh".to_string()];
        let python = ProtectedPaths::for_verify(&argv, &exists, &read);
        assert_eq!(
            python.rule("unittest.py"),
            Some(Rule::Whole(Protection::VerifyScript))
        );
        assert_eq!(python.rule("calc.py"), None);
        let npm = ProtectedPaths::for_verify(&["npm".into(), "test".into()], &exists, &|_| Vec::new());
        assert_eq!(
            npm.rule("package.json"),
            Some(Rule::Sections(Sections::PackageJsonScripts))
        );
        let pkg = r#"{"scripts": {"build": "tsc", "test": "jest"}}"#;
        let new_build = pkg.replace("tsc", "true");
        assert!(Sections::PackageJsonScripts.changed(Some(pkg), Some(&new_build)));
        assert!(!Sections::PackageJson.changed(Some(pkg), Some(&new_build)));
    }

    #[test]
    fn only_runner_sections_of_shared_manifests_count() {
        let old =
            "[package]\nname = \"a\"\n[dependencies]\nserde = \"1\"\n[dev-dependencies]\nproptest = \"1\"\n";
        let new_dep = old.replace("serde = \"1\"", "serde = \"1\"\nrand = \"0.9\"");
        assert!(!Sections::CargoToml.changed(Some(old), Some(&new_dep)));
        let new_dev = old.replace("proptest = \"1\"", "proptest = \"2\"");
        assert!(Sections::CargoToml.changed(Some(old), Some(&new_dev)));
        let cfg = "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n";
        assert!(Sections::SetupCfg.changed(Some(cfg), Some(&cfg.replace("-q", "-q -k nothing"))));
        assert!(!Sections::SetupCfg.changed(Some(cfg), Some(&cfg.replace("name = a", "name = b"))));
        let pkg = r#"{"scripts": {"build": "tsc", "test": "jest"}, "dependencies": {}}"#;
        let new_build = pkg.replace("tsc", "tsc -p .");
        assert!(!Sections::PackageJson.changed(Some(pkg), Some(&new_build)));
        assert!(Sections::PackageJson.changed(Some(pkg), Some(&pkg.replace("jest", "true"))));
        assert!(Sections::PackageJson.changed(Some(pkg), Some("{broken")));
        assert!(Sections::Pyproject.changed(None, Some("[tool.pytest.ini_options]\naddopts = \"-k x\"\n")));
        assert!(!Sections::Pyproject.changed(None, Some("[project]\nname = \"a\"\n")));
        let patched = format!("{old}[patch.crates-io]\nserde = {{ path = \"vendor/serde\" }}\n");
        assert!(Sections::CargoToml.changed(Some(old), Some(&patched)));
    }
}
