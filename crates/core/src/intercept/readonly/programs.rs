//! The grammar of each read-only command: which options it accepts and how many words each takes. An
//! option is listed here only when it neither writes a file nor starts a program nor changes where output
//! goes; anything not listed is refused. `git log --output`, `git diff --ext-diff`, `git show --textconv`,
//! `git -c`, `rg --pre`, `rg -z`, `find -exec|-delete|-fprint`, `sort -o`, `sed -i`, `awk` and `less` are
//! refused by being absent.

/// How many words an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// None: `--stat`, `-n`.
    Flag,
    /// One value: attached (`--max-count=5`, `-n5`) or the next word (`-n 5`), which may not start with `-`.
    Value,
    /// An optional value, only attached: `--color` or `--color=always`, `-u` or `-uno`.
    Attached,
}

/// One accepted option, spelled as the program spells it (`--stat`, `-n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    /// The option, dashes included.
    pub name: &'static str,
    /// The words it takes.
    pub arity: Arity,
}

const fn flag(name: &'static str) -> Opt {
    Opt {
        name,
        arity: Arity::Flag,
    }
}

const fn value(name: &'static str) -> Opt {
    Opt {
        name,
        arity: Arity::Value,
    }
}

const fn attached(name: &'static str) -> Opt {
    Opt {
        name,
        arity: Arity::Attached,
    }
}

/// How a program's words are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// getopt style: options (single letters may be clustered, `-la`) anywhere before `--`, any number of
    /// operands (files, paths, revisions, a pattern), or none when `operands` is false.
    Options {
        /// The accepted options, in one list or several.
        options: &'static [&'static [Opt]],
        /// Whether a count may be given as `-NUMBER` (`head -20`, `git log -5`).
        numeric_count: bool,
        /// Whether operands are accepted.
        operands: bool,
    },
    /// `find`: starting points, then an expression of the tests, operators and actions in
    /// [`FIND_NO_ARGUMENT`] and [`FIND_ONE_ARGUMENT`].
    Find,
}

/// A command allowed while a teachback is pending: a program, and for git its subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOnlyCommand {
    /// How team.yaml's `teachback.readonly_bash` names it: `git diff`, `ls`.
    pub name: &'static str,
    /// The program, looked up on PATH (never a path: a script in the worktree could be called `git`).
    pub program: &'static str,
    /// The git subcommand, for git.
    pub subcommand: Option<&'static str>,
    /// Its grammar.
    pub syntax: Syntax,
}

/// Options git accepts before the subcommand: only the pager switches.
pub const GIT_GLOBAL: &[Opt] = &[flag("--no-pager"), flag("-P")];

/// How `git log`, `git show` and `git diff` print a diff and pick commits.
const GIT_DIFF_OUTPUT: &[Opt] = &[
    flag("-p"),
    flag("-u"),
    flag("--patch"),
    flag("-s"),
    flag("--no-patch"),
    attached("--stat"),
    flag("--numstat"),
    flag("--shortstat"),
    flag("--summary"),
    flag("--compact-summary"),
    flag("--patch-with-stat"),
    flag("--name-only"),
    flag("--name-status"),
    flag("--raw"),
    flag("-z"),
    attached("--color"),
    flag("--no-color"),
    attached("--color-words"),
    attached("--word-diff"),
    flag("--no-ext-diff"),
    flag("--no-textconv"),
    flag("-w"),
    flag("--ignore-all-space"),
    flag("-b"),
    flag("--ignore-space-change"),
    flag("--ignore-blank-lines"),
    flag("--minimal"),
    flag("--patience"),
    flag("--histogram"),
    flag("-R"),
    flag("--full-index"),
    attached("--abbrev"),
    flag("-M"),
    attached("--find-renames"),
    flag("--no-renames"),
    attached("--relative"),
    value("--diff-filter"),
    value("-U"),
    value("--unified"),
];

/// How `git log` and `git show` select and format commits.
const GIT_LOG_SELECTION: &[Opt] = &[
    flag("--oneline"),
    flag("--graph"),
    attached("--decorate"),
    flag("--no-decorate"),
    flag("--all"),
    flag("--branches"),
    flag("--tags"),
    flag("--reverse"),
    flag("--first-parent"),
    flag("--no-merges"),
    flag("--merges"),
    flag("--follow"),
    flag("--abbrev-commit"),
    flag("--no-abbrev-commit"),
    flag("--left-right"),
    flag("--topo-order"),
    flag("--date-order"),
    flag("--source"),
    flag("-m"),
    flag("-c"),
    flag("--cc"),
    flag("-i"),
    flag("--regexp-ignore-case"),
    value("-n"),
    value("--max-count"),
    value("--skip"),
    value("--since"),
    value("--after"),
    value("--until"),
    value("--before"),
    value("--author"),
    value("--committer"),
    value("--grep"),
    value("-S"),
    value("-G"),
    attached("--pretty"),
    attached("--format"),
    value("--date"),
];

const GIT_DIFF_ONLY: &[Opt] = &[
    flag("--cached"),
    flag("--staged"),
    flag("--merge-base"),
    flag("--exit-code"),
    flag("--quiet"),
    flag("--check"),
];

const GIT_STATUS: &[Opt] = &[
    flag("-s"),
    flag("--short"),
    flag("-b"),
    flag("--branch"),
    attached("--porcelain"),
    flag("--long"),
    flag("-v"),
    flag("--verbose"),
    attached("-u"),
    attached("--untracked-files"),
    attached("--ignored"),
    flag("--show-stash"),
    flag("--ahead-behind"),
    flag("--no-ahead-behind"),
    flag("-z"),
];

const LS: &[Opt] = &[
    flag("-a"),
    flag("-A"),
    flag("-l"),
    flag("-h"),
    flag("-R"),
    flag("-t"),
    flag("-r"),
    flag("-S"),
    flag("-1"),
    flag("-d"),
    flag("-F"),
    flag("-i"),
    flag("-s"),
    flag("-n"),
    flag("-p"),
    flag("-C"),
    flag("--all"),
    flag("--almost-all"),
    flag("--human-readable"),
    flag("--recursive"),
    flag("--reverse"),
    flag("--classify"),
    flag("--directory"),
    flag("--inode"),
    flag("--size"),
    flag("--full-time"),
    flag("--group-directories-first"),
    attached("--color"),
    value("--sort"),
    value("--time-style"),
];

const CAT: &[Opt] = &[
    flag("-n"),
    flag("-b"),
    flag("-A"),
    flag("-E"),
    flag("-s"),
    flag("-T"),
    flag("-v"),
    flag("-e"),
    flag("-t"),
    flag("--number"),
    flag("--number-nonblank"),
    flag("--show-all"),
    flag("--squeeze-blank"),
];

const HEAD_TAIL: &[Opt] = &[
    value("-n"),
    value("-c"),
    value("--lines"),
    value("--bytes"),
    flag("-q"),
    flag("-v"),
    flag("--quiet"),
    flag("--verbose"),
];

const WC: &[Opt] = &[
    flag("-l"),
    flag("-w"),
    flag("-c"),
    flag("-m"),
    flag("-L"),
    flag("--lines"),
    flag("--words"),
    flag("--bytes"),
    flag("--chars"),
    flag("--max-line-length"),
];

const PWD: &[Opt] = &[flag("-L"), flag("-P")];

const GREP: &[Opt] = &[
    flag("-r"),
    flag("-R"),
    flag("--recursive"),
    flag("-n"),
    flag("--line-number"),
    flag("-i"),
    flag("--ignore-case"),
    flag("-l"),
    flag("--files-with-matches"),
    flag("-L"),
    flag("--files-without-match"),
    flag("-c"),
    flag("--count"),
    flag("-v"),
    flag("--invert-match"),
    flag("-w"),
    flag("--word-regexp"),
    flag("-x"),
    flag("--line-regexp"),
    flag("-E"),
    flag("-F"),
    flag("-G"),
    flag("-P"),
    flag("-h"),
    flag("-H"),
    flag("-o"),
    flag("--only-matching"),
    flag("-q"),
    flag("--quiet"),
    flag("-s"),
    flag("--no-messages"),
    flag("-I"),
    flag("-a"),
    flag("-Z"),
    flag("--null"),
    attached("--color"),
    attached("--colour"),
    value("-A"),
    value("-B"),
    value("-C"),
    value("--after-context"),
    value("--before-context"),
    value("--context"),
    value("-e"),
    value("--regexp"),
    value("-m"),
    value("--max-count"),
    value("--include"),
    value("--exclude"),
    value("--exclude-dir"),
];

const RG: &[Opt] = &[
    flag("-n"),
    flag("--line-number"),
    flag("-N"),
    flag("--no-line-number"),
    flag("-i"),
    flag("--ignore-case"),
    flag("-S"),
    flag("--smart-case"),
    flag("-s"),
    flag("--case-sensitive"),
    flag("-F"),
    flag("--fixed-strings"),
    flag("-w"),
    flag("--word-regexp"),
    flag("-x"),
    flag("--line-regexp"),
    flag("-v"),
    flag("--invert-match"),
    flag("-l"),
    flag("--files-with-matches"),
    flag("--files-without-match"),
    flag("-c"),
    flag("--count"),
    flag("--count-matches"),
    flag("-o"),
    flag("--only-matching"),
    flag("--hidden"),
    flag("-u"),
    flag("--no-ignore"),
    flag("--no-ignore-vcs"),
    flag("-L"),
    flag("--follow"),
    flag("--files"),
    flag("--no-heading"),
    flag("--heading"),
    flag("-I"),
    flag("--no-filename"),
    flag("-H"),
    flag("--with-filename"),
    flag("-U"),
    flag("--multiline"),
    flag("--multiline-dotall"),
    flag("-P"),
    flag("--pcre2"),
    flag("--json"),
    flag("--vimgrep"),
    flag("--column"),
    flag("--trim"),
    flag("-q"),
    flag("--quiet"),
    flag("--stats"),
    flag("--type-list"),
    flag("-0"),
    flag("--null"),
    flag("-a"),
    flag("--text"),
    flag("-p"),
    flag("--pretty"),
    flag("--no-messages"),
    value("--sort"),
    value("--sortr"),
    value("--color"),
    value("-A"),
    value("-B"),
    value("-C"),
    value("--after-context"),
    value("--before-context"),
    value("--context"),
    value("-m"),
    value("--max-count"),
    value("-d"),
    value("--max-depth"),
    value("-g"),
    value("--glob"),
    value("--iglob"),
    value("-t"),
    value("--type"),
    value("-T"),
    value("--type-not"),
    value("-e"),
    value("--regexp"),
    value("-j"),
    value("--threads"),
    value("-M"),
    value("--max-columns"),
    value("-r"),
    value("--replace"),
    value("--max-filesize"),
];

/// `find` tests, operators and actions that take no argument. `(` and `)` arrive unquoted by the shell.
pub const FIND_NO_ARGUMENT: &[&str] = &[
    "-print",
    "-print0",
    "-prune",
    "-quit",
    "-ls",
    "-empty",
    "-readable",
    "-writable",
    "-executable",
    "-true",
    "-false",
    "-depth",
    "-xdev",
    "-mount",
    "-follow",
    "-noleaf",
    "-daystart",
    "-nouser",
    "-nogroup",
    "-a",
    "-and",
    "-o",
    "-or",
    "-not",
    "!",
    "(",
    ")",
    ",",
];

/// `find` tests that take one argument, which `find` reads whatever it looks like (`-mtime -7`).
pub const FIND_ONE_ARGUMENT: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-lname",
    "-ilname",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-maxdepth",
    "-mindepth",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-newer",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-samefile",
    "-printf",
];

/// `find`'s options before the starting points (how symbolic links are followed).
pub const FIND_LEADING: &[&str] = &["-H", "-L", "-P"];

const fn git(name: &'static str, subcommand: &'static str, syntax: Syntax) -> ReadOnlyCommand {
    ReadOnlyCommand {
        name,
        program: "git",
        subcommand: Some(subcommand),
        syntax,
    }
}

const fn plain(
    name: &'static str,
    options: &'static [&'static [Opt]],
    numeric_count: bool,
) -> ReadOnlyCommand {
    ReadOnlyCommand {
        name,
        program: name,
        subcommand: None,
        syntax: Syntax::Options {
            options,
            numeric_count,
            operands: true,
        },
    }
}

/// Every read-only command agency knows, in the order team.yaml's default lists them.
pub const READ_ONLY_COMMANDS: &[ReadOnlyCommand] = &[
    git(
        "git status",
        "status",
        Syntax::Options {
            options: &[GIT_STATUS],
            numeric_count: false,
            operands: true,
        },
    ),
    git(
        "git diff",
        "diff",
        Syntax::Options {
            options: &[GIT_DIFF_OUTPUT, GIT_DIFF_ONLY],
            numeric_count: false,
            operands: true,
        },
    ),
    git(
        "git log",
        "log",
        Syntax::Options {
            options: &[GIT_DIFF_OUTPUT, GIT_LOG_SELECTION],
            numeric_count: true,
            operands: true,
        },
    ),
    git(
        "git show",
        "show",
        Syntax::Options {
            options: &[GIT_DIFF_OUTPUT, GIT_LOG_SELECTION],
            numeric_count: false,
            operands: true,
        },
    ),
    plain("ls", &[LS], false),
    plain("cat", &[CAT], false),
    plain("head", &[HEAD_TAIL], true),
    plain("tail", &[HEAD_TAIL], true),
    plain("wc", &[WC], false),
    ReadOnlyCommand {
        name: "pwd",
        program: "pwd",
        subcommand: None,
        syntax: Syntax::Options {
            options: &[PWD],
            numeric_count: false,
            operands: false,
        },
    },
    plain("grep", &[GREP], false),
    plain("rg", &[RG], false),
    ReadOnlyCommand {
        name: "find",
        program: "find",
        subcommand: None,
        syntax: Syntax::Find,
    },
];
