//! What a verify command runs without naming it: the tool it starts (read from its argv and from the text
//! of the scripts it names) loads files from the checkout that change what the check does. A module named
//! like one the tests import shadows it (`unittest.py` at the top of the checkout, with `python -m
//! unittest`); `npm test` runs whatever `package.json`'s scripts say and whatever `node_modules/` holds;
//! `make` reads its makefiles; `cargo test` runs every `build.rs` with the toolchain `rust-toolchain.toml`
//! picks. Those files count as the verify command's own ([`crate::protected`]), whatever the command's
//! argv names.

/// Top-level Python modules a test run imports (the test frameworks and the standard-library modules tests
/// and frameworks load after start-up): a file of that name where Python looks first shadows the real one.
const PYTHON_SHADOWED: &[&str] = &[
    "unittest",
    "doctest",
    "pytest",
    "_pytest",
    "pluggy",
    "py",
    "nose",
    "nose2",
    "hypothesis",
    "coverage",
    "json",
    "re",
    "subprocess",
    "typing",
    "dataclasses",
    "pathlib",
    "tempfile",
    "shutil",
    "random",
    "math",
    "decimal",
    "functools",
    "itertools",
    "logging",
    "argparse",
    "inspect",
    "traceback",
    "warnings",
    "collections",
    "copy",
    "string",
    "textwrap",
    "difflib",
    "pprint",
    "contextlib",
    "enum",
    "datetime",
    "operator",
    "glob",
    "fnmatch",
];

/// Which tools a verify command runs, and where Python looks for modules first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runners {
    python: bool,
    node: bool,
    make: bool,
    cargo: bool,
    /// Modules run with `python -m NAME` (their top-level package).
    python_modules: Vec<String>,
    /// Directories Python searches first besides the checkout's top: `PYTHONPATH=` entries and the
    /// directories of the `.py` scripts run, repository-relative (`""` for the top).
    python_dirs: Vec<String>,
}

impl Runners {
    /// The tools `words` (the verify argv, then the words of the scripts it names) start.
    pub fn of<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        let mut runners = Runners {
            python_dirs: vec![String::new()],
            ..Runners::default()
        };
        let mut after_dash_m = false;
        for word in words.into_iter().flat_map(shell_words) {
            if after_dash_m {
                let top = word.split('.').next().unwrap_or(word);
                push_unique(&mut runners.python_modules, top.to_string());
                after_dash_m = false;
                continue;
            }
            if word == "-m" {
                after_dash_m = runners.python;
                continue;
            }
            if let Some(paths) = word.strip_prefix("PYTHONPATH=") {
                runners.python = true;
                for dir in paths.split(':').filter_map(relative_dir) {
                    push_unique(&mut runners.python_dirs, dir);
                }
                continue;
            }
            let program = word.rsplit('/').next().unwrap_or(word);
            if program.starts_with("python")
                || matches!(
                    program,
                    "pytest" | "py.test" | "tox" | "nox" | "uv" | "poetry" | "hatch" | "pdm"
                )
            {
                runners.python = true;
            } else if word.ends_with(".py") {
                runners.python = true;
                let dir = word.rsplit_once('/').map_or("", |(dir, _)| dir);
                if let Some(dir) = relative_dir(dir) {
                    push_unique(&mut runners.python_dirs, dir);
                }
            } else if matches!(
                program,
                "npm" | "npx" | "yarn" | "pnpm" | "bun" | "node" | "jest" | "vitest" | "mocha"
            ) {
                runners.node = true;
            } else if matches!(program, "make" | "gmake" | "just") {
                runners.make = true;
            } else if matches!(program, "cargo" | "cargo-nextest" | "rustc") {
                runners.cargo = true;
            }
        }
        runners
    }

    /// Whether every `package.json` script counts (a node runner starts them by name, with their `pre`
    /// and `post` hooks), not only the `test*` ones.
    pub fn all_package_scripts(&self) -> bool {
        self.node
    }

    /// Whether `path` (file `name`) changes what the verify command runs.
    pub fn steers(&self, path: &str, name: &str) -> bool {
        (self.make
            && (matches!(
                name,
                "Makefile" | "GNUmakefile" | "makefile" | "justfile" | ".justfile"
            ) || name.ends_with(".mk")))
            || (self.cargo
                && (name == "build.rs" || (!path.contains('/') && name.starts_with("rust-toolchain"))))
            || (self.node && path.split('/').any(|part| part == "node_modules"))
            || (self.python && self.shadows_python_module(path))
    }

    /// Whether `path` is a module or package where Python looks first, named like one the run imports.
    fn shadows_python_module(&self, path: &str) -> bool {
        self.python_dirs.iter().any(|dir| {
            let Some(inside) = (if dir.is_empty() {
                Some(path)
            } else {
                path.strip_prefix(dir.as_str()).and_then(|p| p.strip_prefix('/'))
            }) else {
                return false;
            };
            let top = match inside.split_once('/') {
                // A package: any Python file in it.
                Some((package, rest)) if rest.ends_with(".py") => package,
                Some(_) => return false,
                None => match inside.strip_suffix(".py").or_else(|| inside.strip_suffix(".pyc")) {
                    Some(module) => module,
                    None => return false,
                },
            };
            PYTHON_SHADOWED.contains(&top) || self.python_modules.iter().any(|m| m == top)
        })
    }
}

/// The words of a shell text, split at white space and shell punctuation (quotes dropped): enough to see
/// which programs a script starts, not a shell parser.
fn shell_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '&' | '(' | ')' | '`' | '"' | '\''))
        .filter(|w| !w.is_empty())
}

/// A repository-relative directory from what a command says (`./src/`, `.`, `$(pwd)/lib` is not one).
fn relative_dir(dir: &str) -> Option<String> {
    let dir = dir.trim_start_matches("./").trim_end_matches('/');
    if dir == "." || dir.is_empty() {
        return Some(String::new());
    }
    if dir.starts_with('/') || dir.contains('$') || dir.split('/').any(|part| part == "..") {
        return None;
    }
    Some(dir.to_string())
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steers(runners: &Runners, path: &str) -> bool {
        runners.steers(path, path.rsplit('/').next().unwrap_or(path))
    }

    #[test]
    fn python_modules_that_shadow_what_the_tests_import_steer_the_run() {
        let script = "set -e\ncd \"$(dirname \"$0\")/..\"\nPYTHONPATH=.:src python3 -m unittest discover -s tests -v\n";
        let runners = Runners::of(["sh", "scripts/verify.sh", script]);
        for path in [
            "unittest.py",
            "unittest/__init__.py",
            "src/unittest.py",
            "json.py",
            "pytest.py",
        ] {
            assert!(steers(&runners, path), "{path}");
        }
        for path in [
            "calc.py",
            "pkg/json.py",
            "docs/unittest.md",
            "unittest.txt",
            "src/pkg/re.py",
        ] {
            assert!(!steers(&runners, path), "{path}");
        }
        let module = Runners::of(["python", "-m", "mytool.check"]);
        assert!(steers(&module, "mytool.py"));
        assert!(steers(&module, "mytool/check.py"));
        let script = Runners::of(["python3", "tools/check.py"]);
        assert!(steers(&script, "tools/re.py"));
        assert!(!steers(&Runners::of(["sh", "check.sh"]), "unittest.py"));
    }

    #[test]
    fn node_make_and_cargo_read_their_own_files() {
        let npm = Runners::of(["npm", "test"]);
        assert!(npm.all_package_scripts());
        assert!(steers(&npm, "node_modules/jest/index.js"));
        assert!(!steers(&npm, "src/index.js"));
        let make = Runners::of(["make", "check"]);
        assert!(steers(&make, "Makefile") && steers(&make, "build/rules.mk"));
        let cargo = Runners::of(["sh", "-c", "cargo test --workspace"]);
        assert!(steers(&cargo, "build.rs") && steers(&cargo, "crates/a/build.rs"));
        assert!(steers(&cargo, "rust-toolchain.toml"));
        assert!(!steers(&cargo, "src/lib.rs"));
        let none = Runners::of(["./check"]);
        assert!(!none.all_package_scripts() && !steers(&none, "build.rs") && !steers(&none, "Makefile"));
    }
}
