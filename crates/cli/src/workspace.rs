//! Finding agency's files for the repository the user is in: the `.agency/` directory at the repository's
//! top level holds `team.yaml` and the SQLite blackboard `agency.db`. `--db`/`AGENCY_DB` and
//! `--config`/`AGENCY_CONFIG` override the locations; `--db` may also name a PostgreSQL database
//! ([`BlackboardAt`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agency_store::{Blackboard, PostgresBlackboard, SqliteBlackboard, StoreError};

use crate::error::{CommandError, CommandResult, ErrorKind};

/// The directory agency keeps its state in, inside a repository.
pub const AGENCY_DIR: &str = ".agency";
/// The configuration file name inside [`AGENCY_DIR`].
pub const CONFIG_FILE: &str = "team.yaml";
/// The blackboard file name inside [`AGENCY_DIR`].
pub const DB_FILE: &str = "agency.db";

/// Where this invocation's files live.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The repository's top level (the directory holding `.agency/`).
    pub root: PathBuf,
    /// The configuration file.
    pub config: PathBuf,
    /// The blackboard.
    pub db: BlackboardAt,
}

/// Where the blackboard is: a SQLite file (the default) or a PostgreSQL database, as `--db` / `AGENCY_DB`
/// named it (`postgres://...`, `postgresql://...` or `host=... dbname=...`, the forms
/// [`agency_store::is_postgres`] recognises). A connection string may hold a password, so it is shown only
/// redacted ([`fmt::Display`], [`fmt::Debug`]).
#[derive(Clone, PartialEq, Eq)]
pub enum BlackboardAt {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string, as given.
    Postgres(String),
}

impl BlackboardAt {
    /// What `--db` names: a PostgreSQL connection string, or else a SQLite path.
    pub fn from_arg(value: &Path) -> BlackboardAt {
        match value.to_str() {
            Some(text) if agency_store::is_postgres(text) => BlackboardAt::Postgres(text.trim().to_string()),
            _ => BlackboardAt::Sqlite(value.to_path_buf()),
        }
    }

    /// The SQLite file, when the blackboard is one.
    pub fn sqlite(&self) -> Option<&Path> {
        match self {
            BlackboardAt::Sqlite(path) => Some(path),
            BlackboardAt::Postgres(_) => None,
        }
    }

    /// Whether the blackboard is in PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, BlackboardAt::Postgres(_))
    }

    /// Whether there is a blackboard to open: the SQLite file exists (a PostgreSQL database is found when
    /// it is connected to, and its schema created then).
    pub fn exists(&self) -> bool {
        match self {
            BlackboardAt::Sqlite(path) => path.exists(),
            BlackboardAt::Postgres(_) => true,
        }
    }

    /// Opens (creating or migrating) the blackboard.
    pub fn open(&self) -> Result<Arc<dyn Blackboard>, StoreError> {
        Ok(match self {
            BlackboardAt::Sqlite(path) => Arc::new(SqliteBlackboard::open(path)?),
            BlackboardAt::Postgres(url) => Arc::new(PostgresBlackboard::open(url)?),
        })
    }

    /// The value that names this blackboard to another `agency` process (`AGENCY_DB`), password included:
    /// for a child's environment only, never for output or argv (which other users can list).
    pub fn to_env_value(&self) -> std::ffi::OsString {
        match self {
            BlackboardAt::Sqlite(path) => path.clone().into_os_string(),
            BlackboardAt::Postgres(url) => url.into(),
        }
    }
}

impl fmt::Display for BlackboardAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlackboardAt::Sqlite(path) => write!(f, "{}", path.display()),
            BlackboardAt::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

impl fmt::Debug for BlackboardAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlackboardAt::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            BlackboardAt::Postgres(url) => f.debug_tuple("Postgres").field(&redact_password(url)).finish(),
        }
    }
}

/// What replaces a password in anything shown.
const REDACTED: &str = "***";

/// `conninfo` with its password replaced by `***`: the `user:PASSWORD@` of a URL, a `password=` query
/// parameter, or a `password=VALUE` pair (quoted or not) of the key/value form.
pub fn redact_password(conninfo: &str) -> String {
    let scheme_end = ["postgresql://", "postgres://"]
        .iter()
        .find_map(|scheme| conninfo.starts_with(scheme).then_some(scheme.len()));
    match scheme_end {
        Some(start) => redact_url(conninfo, start),
        None => redact_pairs(conninfo),
    }
}

fn redact_url(url: &str, start: usize) -> String {
    let (head, query) = match url.find('?') {
        Some(q) => (&url[..q], Some(&url[q + 1..])),
        None => (url, None),
    };
    let mut out = String::from(&head[..start]);
    let rest = &head[start..];
    // The user info ends at the last `@` of the authority (a password's own `@` should be %40, but a
    // typed one must not leak either).
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:{REDACTED}")),
                None => out.push_str(userinfo),
            }
            out.push_str(&rest[at..]);
        }
        None => out.push_str(rest),
    }
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if key == "password" => format!("{key}={REDACTED}"),
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// The key/value form: `key = value` pairs separated by spaces, values optionally single-quoted with `\`
/// escapes (libpq's rules).
fn redact_pairs(conninfo: &str) -> String {
    let chars: Vec<char> = conninfo.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        // Copy whitespace, then the key up to `=`.
        if chars[i].is_whitespace() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let key_start = i;
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() {
            i += 1;
        }
        let key: String = chars[key_start..i].iter().collect();
        out.push_str(&key);
        while i < chars.len() && chars[i].is_whitespace() {
            out.push(chars[i]);
            i += 1;
        }
        if i >= chars.len() || chars[i] != '=' {
            continue;
        }
        out.push('=');
        i += 1;
        while i < chars.len() && chars[i].is_whitespace() {
            out.push(chars[i]);
            i += 1;
        }
        let value_start = i;
        if i < chars.len() && chars[i] == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
        } else {
            while i < chars.len() && !chars[i].is_whitespace() {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = i.min(chars.len());
        }
        if key == "password" {
            out.push_str(REDACTED);
        } else {
            out.extend(&chars[value_start..i]);
        }
    }
    out
}

/// Overrides from flags or the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--db` / `AGENCY_DB`.
    pub db: Option<PathBuf>,
    /// `--config` / `AGENCY_CONFIG`.
    pub config: Option<PathBuf>,
}

/// The nearest ancestor of `start` (itself included) that is a git work tree top level.
pub fn find_git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| is_git_entry(&dir.join(".git")))
        .map(Path::to_path_buf)
}

/// Whether a `.git` is what git would take for one: a repository directory (it holds `HEAD`), or a file that
/// points at one (`gitdir: …`, a linked worktree or a submodule). An empty or stray `.git` directory above a
/// project is not a repository to git, so it is not one here either: `agency init` there would make a
/// workspace for a directory git does not know.
fn is_git_entry(dot_git: &Path) -> bool {
    use std::io::Read;
    if dot_git.is_dir() {
        return dot_git.join("HEAD").is_file();
    }
    // Only its first bytes are read, and only from a regular file (a FIFO would block).
    let mut start = [0u8; 7];
    dot_git.is_file()
        && std::fs::File::open(dot_git)
            .and_then(|mut file| file.read_exact(&mut start))
            .is_ok()
        && &start == b"gitdir:"
}

/// The nearest ancestor of `start` holding an `.agency/` directory.
fn find_agency_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(AGENCY_DIR).is_dir())
        .map(Path::to_path_buf)
}

impl Workspace {
    /// The workspace for a repository root, with overrides applied.
    pub fn at(root: PathBuf, overrides: &Overrides) -> Workspace {
        let dir = root.join(AGENCY_DIR);
        Workspace {
            config: overrides.config.clone().unwrap_or_else(|| dir.join(CONFIG_FILE)),
            db: BlackboardAt::from_arg(&overrides.db.clone().unwrap_or_else(|| dir.join(DB_FILE))),
            root,
        }
    }

    /// Finds an initialised workspace from `cwd`. With a `--db` override no `.agency/` is needed.
    pub fn discover(cwd: &Path, overrides: &Overrides) -> CommandResult<Workspace> {
        if let Some(root) = find_agency_root(cwd) {
            return Ok(Workspace::at(root, overrides));
        }
        if overrides.db.is_some() {
            let root = find_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
            return Ok(Workspace::at(root, overrides));
        }
        Err(CommandError::new(
            ErrorKind::NoWorkspace,
            format!("no agency workspace in {} or any parent directory", cwd.display()),
        )
        .hint("run `agency init` at the top of your git repository, or pass --db PATH|URL"))
    }

    /// Whether the blackboard exists yet (a PostgreSQL one always may: it is created when connected to).
    pub fn has_db(&self) -> bool {
        self.db.exists()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_root_is_where_git_would_find_one() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let deep = project.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        // An empty `.git` directory above the project is not a repository, to git or here.
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(find_git_root(&deep), None);
        // A repository directory is.
        std::fs::create_dir(project.join(".git")).unwrap();
        std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(find_git_root(&deep), Some(project.clone()));
        // So is a linked worktree's `.git` file; any other file is not.
        let linked = deep.join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: /repo/.git/worktrees/linked\n").unwrap();
        assert_eq!(find_git_root(&linked), Some(linked.clone()));
        std::fs::write(linked.join(".git"), "not a pointer\n").unwrap();
        assert_eq!(find_git_root(&linked), Some(project));
    }

    #[test]
    fn passwords_are_redacted_in_every_connection_string_form() {
        let cases = [
            (
                "postgres://agent:s3cret@db:5432/agency",
                "postgres://agent:***@db:5432/agency",
            ),
            (
                "postgresql://agent:p@ss@db/agency",
                "postgresql://agent:***@db/agency",
            ),
            ("postgres://agent@db/agency", "postgres://agent@db/agency"),
            (
                "postgres://db/agency?user=a&password=s3cret&sslmode=disable",
                "postgres://db/agency?user=a&password=***&sslmode=disable",
            ),
            (
                "host=db user=agent password=s3cret dbname=agency",
                "host=db user=agent password=*** dbname=agency",
            ),
            (
                "host=db password = 's3 \\' cret' dbname=agency",
                "host=db password = *** dbname=agency",
            ),
            ("password=s3cret", "password=***"),
            ("host=db dbname=agency", "host=db dbname=agency"),
        ];
        for (given, shown) in cases {
            assert_eq!(redact_password(given), shown, "{given}");
            assert!(!redact_password(given).contains("s3"), "{given}");
        }
    }

    #[test]
    fn db_arguments_name_postgres_or_a_sqlite_file() {
        let pg = BlackboardAt::from_arg(Path::new("host=db user=a password=s3cret dbname=x"));
        assert!(pg.is_postgres());
        assert_eq!(pg.sqlite(), None);
        assert!(!format!("{pg} {pg:?}").contains("s3cret"));
        let file = BlackboardAt::from_arg(Path::new(".agency/agency.db"));
        assert_eq!(file.sqlite(), Some(Path::new(".agency/agency.db")));
    }
}
