//! The read-only check against known attacks and honest reads, and fuzzed against a reference: command
//! lines built from a vocabulary whose every piece is labelled allowed or not, so the expected answer is a
//! plain "no forbidden piece anywhere".

use proptest::prelude::*;

use super::shell::{join, quote, split};
use super::*;

fn allowed(line: &str) -> Result<(), NotReadOnly> {
    check(line, &|_| true)
}

#[test]
fn known_attacks_are_refused() {
    let attacks = [
        // Write a file.
        "git log --output=.agency/team.yaml",
        "git log --output .agency/team.yaml",
        "git diff --output=/tmp/x HEAD",
        "git show --output=x HEAD",
        "git log -p --output=.agency/team.yaml -1",
        "sort -o .agency/team.yaml x",
        "sed -i s/enforce/shadow/ .agency/team.yaml",
        "find . -fprint /tmp/x",
        "find . -fprintf /tmp/x %p",
        "find . -fls /tmp/x",
        "cat a > b",
        "cat a >> b",
        "ls 2>x",
        "ls &>x",
        "git status |& tee x",
        "cat x | tee .agency/team.yaml",
        // Run a program.
        "rg --pre sh foo",
        "rg --pre=./x foo",
        "rg -z foo",
        "rg --search-zip foo",
        "rg --hostname-bin=sh foo",
        "git diff --ext-diff",
        "git log -p --ext-diff",
        "git show --textconv HEAD",
        "git -c core.pager=sh log",
        "git -c diff.external=sh diff",
        "git --exec-path=/tmp log",
        "git -C /tmp status",
        "GIT_EXTERNAL_DIFF=./x git diff",
        "GIT_PAGER='sh -c x' git log",
        "find . -exec rm {} ;",
        "find . -exec rm '{}' ';'",
        "find . -execdir sh -c x ';'",
        "find . -ok rm '{}' ';'",
        "find . -delete",
        "awk 'BEGIN { system(\"touch x\") }'",
        "awk '{print}' x",
        "less x",
        "xargs rm",
        "env git status",
        "command git status",
        "./git status",
        "/tmp/rg foo",
        "bash -c 'git status; touch x'",
        "bash -c 'bash -c \"ls\"'",
        "bash x.sh",
        "sh -c 'ls' extra",
        // Substitute, expand, chain or background.
        "cat $(touch x)",
        "cat `touch x`",
        "cat \"$(touch x)\"",
        "cat $HOME/x",
        "cat <(touch x)",
        "ls; rm -rf .",
        "ls && touch x",
        "ls || touch x",
        "git diff | sh",
        "ls & touch x",
        "git diff --{output=x,stat}",
        "cat *",
        "ls # comment",
        "(ls)",
        "{ ls; }",
        "ls &&",
        "; ls",
        "",
        "   ",
        // Unknown programs and subcommands.
        "git commit -m x",
        "git checkout .",
        "git stash",
        "git",
        "rm -rf .",
        "touch x",
        "gitstatus",
        "lsof",
        "ls --frobnicate",
        "head -n -5 x",
        "git log --max-count -5",
        "pwd /tmp",
    ];
    for line in attacks {
        assert!(allowed(line).is_err(), "allowed: {line}");
    }
}

#[test]
fn honest_reads_are_allowed() {
    let reads = [
        "git log --oneline -5",
        "git log --oneline -n 5",
        "git log -n5 --stat",
        "git log --format=%H%x09%s main..HEAD",
        "git diff HEAD~1 -- src/",
        "git diff --stat",
        "git diff --cached -U3",
        "git diff -- --output=x",
        "git show HEAD:.agency/team.yaml",
        "git show --stat HEAD",
        "git --no-pager log -3",
        "git status",
        "git status --short",
        "git status -sb",
        "git status --porcelain=v2 -uno",
        "rg -n foo src",
        "rg -n -g '*.rs' 'fn main' crates",
        "rg -uu --hidden -i todo",
        "rg -o 'x+' f",
        "ls",
        "ls -la",
        "ls -la src | head",
        "cat file",
        "cat -n src/main.rs",
        "head -n 20 f",
        "head -20 f",
        "tail -n +5 f",
        "grep -rn x .",
        "grep -rn --include='*.rs' 'fn main' crates",
        "grep -e-x f",
        "grep --regexp=-x f",
        "find . -name '*.rs'",
        "find src -type f -name '*.rs' -mtime -7",
        "find . '(' -name a -o -name b ')' -print",
        "find . \\( -name a -o -name b \\) -print",
        "find . -maxdepth 2 -type d -not -path './target/*'",
        "wc -l",
        "wc -l src/main.rs",
        "pwd",
        "git log --oneline | head -5",
        "git status && git diff --stat",
        "ls; pwd",
        "ls\npwd\n",
        "cat 'a file; with > metacharacters'",
        "cat \"it's\"",
        "bash -lc 'git status --short'",
        "sh -c 'ls -la'",
    ];
    for line in reads {
        assert_eq!(allowed(line), Ok(()), "{line}");
    }
}

#[test]
fn only_enabled_commands_are_allowed() {
    let only_git_status = |name: &str| name == "git status";
    assert_eq!(check("git status -s", &only_git_status), Ok(()));
    let refused = check("git status && ls", &only_git_status).unwrap_err();
    assert_eq!(refused.0, "`ls` is not in teachback.readonly_bash");
}

#[test]
fn refusals_say_what_is_wrong() {
    let why = |line: &str| allowed(line).unwrap_err().0;
    assert_eq!(
        why("git log --output=x"),
        "git log: `--output` is not an option agency knows to be read-only"
    );
    assert_eq!(
        why("find . -exec rm '{}' ';'"),
        "find: `-exec` is not a test or action agency knows to be read-only (-exec, -delete and -fprint are not)"
    );
    assert_eq!(why("sed -i x f"), "`sed` is not a read-only command agency knows");
    assert_eq!(
        why("cat a > b"),
        "a redirection (`>`, `>>`, `<`, `<(`) reads or writes a file"
    );
    assert!(why("GIT_EXTERNAL_DIFF=x git diff").contains("sets an environment variable"));
    assert_eq!(
        why("grep -e -x f"),
        "grep: the value of `-e` may not start with `-` (found `-x`); attach it: `-e-x`"
    );
}

#[test]
fn every_command_name_is_found_by_name() {
    for command in READ_ONLY_COMMANDS {
        assert_eq!(command_named(command.name), Some(command));
        assert_eq!(command_named(&format!("  {}  ", command.name)), Some(command));
    }
    assert_eq!(command_named("cargo tree"), None);
}

#[test]
fn split_reads_quotes_escapes_and_separators() {
    let words = |line: &str| split(line).unwrap();
    assert_eq!(
        words(r#"a 'b c' "d\"e" f\ g ''"#),
        vec![vec!["a", "b c", "d\"e", "f g", ""]]
    );
    assert_eq!(
        words("a && b || c | d; e\nf"),
        vec![vec!["a"], vec!["b"], vec!["c"], vec!["d"], vec!["e"], vec!["f"]]
    );
    assert_eq!(words("a b#c"), vec![vec!["a", "b#c"]]);
    assert_eq!(words("a \\\n b"), vec![vec!["a", "b"]]);
    assert_eq!(words("a &&\n b"), vec![vec!["a"], vec!["b"]]);
}

proptest! {
    #[test]
    fn join_then_split_gives_the_words_back(argv in prop::collection::vec(".*", 1..6)) {
        prop_assert_eq!(split(&join(&argv)), Ok(vec![argv]));
    }
}

/// A piece of a command: the words it adds, and whether it is allowed.
#[derive(Debug, Clone)]
struct Piece {
    words: &'static [&'static str],
    allowed: bool,
}

/// One program's vocabulary: how it is invoked, its allowed and forbidden options, and its operands.
struct Vocabulary {
    /// The words naming the program, and whether that invocation is allowed at all.
    invocations: &'static [(&'static [&'static str], bool)],
    safe: &'static [&'static [&'static str]],
    forbidden: &'static [&'static [&'static str]],
    operands: &'static [&'static str],
    /// Operands come before options (find's starting points).
    operands_first: bool,
}

/// Operands with shell metacharacters: quoted, they are harmless text.
const OPERANDS: &[&str] = &[
    "src/",
    "README.md",
    "a b",
    "it's",
    "x > y",
    "$(touch z)",
    "`id`",
    "a;b",
    "*.rs",
    "{a,b}",
    "",
];

const GIT_LOG_FORBIDDEN: &[&[&str]] = &[
    &["--output=/tmp/x"],
    &["--output", "/tmp/x"],
    &["--ext-diff"],
    &["--textconv"],
    &["--exec=sh"],
    &["--frobnicate"],
    &["--stat", "--output=x"],
    &["-po", "x"],
];

const VOCABULARY: &[Vocabulary] = &[
    Vocabulary {
        invocations: &[
            (&["git", "log"], true),
            (&["git", "--no-pager", "log"], true),
            (&["git", "-c", "core.pager=touch /tmp/x", "log"], false),
            (&["GIT_EXTERNAL_DIFF=/tmp/x", "git", "log"], false),
            (&["./git", "log"], false),
        ],
        safe: &[
            &["--oneline"],
            &["-n", "5"],
            &["-5"],
            &["--stat"],
            &["--format=%H %s"],
            &["--color=never"],
            &["-p"],
            &["-c"],
            &["--since", "1 week"],
        ],
        forbidden: GIT_LOG_FORBIDDEN,
        operands: &["HEAD~1", "main..HEAD", "src/"],
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["git", "diff"], true), (&["git", "-C", "/tmp", "diff"], false)],
        safe: &[
            &["--stat"],
            &["--cached"],
            &["-U3"],
            &["-U", "1"],
            &["--name-only"],
            &["-w"],
        ],
        forbidden: GIT_LOG_FORBIDDEN,
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["git", "show"], true), (&["git", "stash"], false)],
        safe: &[&["--stat"], &["--name-status"], &["--format=%an"]],
        forbidden: GIT_LOG_FORBIDDEN,
        operands: &["HEAD", "HEAD:README.md"],
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["git", "status"], true), (&["git", "commit"], false)],
        safe: &[&["--short"], &["-sb"], &["--porcelain=v2"], &["-uno"]],
        forbidden: &[&["--frobnicate"], &["-sx"]],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["rg"], true), (&["/tmp/rg"], false)],
        safe: &[
            &["-n"],
            &["-i"],
            &["-g", "*.rs"],
            &["-A", "3"],
            &["-uu"],
            &["--hidden"],
            &["-o"],
        ],
        forbidden: &[
            &["--pre", "sh"],
            &["--pre=sh"],
            &["-z"],
            &["-nz"],
            &["--search-zip"],
            &["--pre-glob", "*"],
            &["--hostname-bin=sh"],
            &["-A", "--pre=sh"],
        ],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["grep"], true)],
        safe: &[&["-rn"], &["-i"], &["-e", "x"], &["--include=*.rs"], &["-C2"]],
        forbidden: &[&["--frobnicate"], &["-rnX"]],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["find"], true)],
        safe: &[
            &["-name", "*.rs"],
            &["-type", "f"],
            &["-maxdepth", "2"],
            &["-mtime", "-7"],
            &["-print"],
            &["-not", "-path", "./target/*"],
            &["(", "-name", "-exec", ")"],
        ],
        forbidden: &[
            &["-exec", "rm", "{}", ";"],
            &["-execdir", "sh", "-c", "x", "{}", "+"],
            &["-ok", "rm", "{}", ";"],
            &["-delete"],
            &["-fprint", "/tmp/x"],
            &["-fprintf", "/tmp/x", "%p"],
            &["-fls", "/tmp/x"],
        ],
        operands: &[".", "src", "a b"],
        operands_first: true,
    },
    Vocabulary {
        invocations: &[(&["ls"], true), (&["cat"], true), (&["wc"], true)],
        safe: &[],
        forbidden: &[&["--frobnicate"], &["-o", "x"]],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["head"], true), (&["tail"], true)],
        safe: &[&["-n", "20"], &["-20"], &["-c10"], &["-q"]],
        forbidden: &[&["-n", "-5"], &["--follow"]],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["ls"], true)],
        safe: &[&["-la"], &["-R"], &["--color=never"], &["-1"]],
        forbidden: &[&["-lq"]],
        operands: OPERANDS,
        operands_first: false,
    },
    Vocabulary {
        invocations: &[(&["pwd"], true)],
        safe: &[&["-P"]],
        forbidden: &[&["/tmp"]],
        operands: &[],
        operands_first: false,
    },
    Vocabulary {
        invocations: &[
            (&["sort"], false),
            (&["sed"], false),
            (&["awk"], false),
            (&["less"], false),
            (&["tee"], false),
            (&["xargs"], false),
            (&["python3"], false),
            (&["env"], false),
        ],
        safe: &[&["-n"]],
        forbidden: &[&["-o", "x"], &["-i"], &["BEGIN { system(\"id\") }"], &["!id"]],
        operands: OPERANDS,
        operands_first: false,
    },
];

/// Text appended unquoted: shell syntax that is never allowed.
const INJECTIONS: &[&str] = &[
    " > /tmp/x",
    " >> /tmp/x",
    " 2>/tmp/x",
    " < /etc/passwd",
    " $(touch x)",
    " `touch x`",
    " \"$(touch x)\"",
    " & touch x",
    " | sh",
    " ; rm -rf .",
    " && touch x",
    " <(touch x)",
    " {--output=x,--stat}",
    " *",
    " # x",
    " $HOME",
];

const SEPARATORS: &[&str] = &[" && ", " || ", " | ", "; ", "\n"];

#[derive(Debug, Clone)]
struct Command {
    invocation: (&'static [&'static str], bool),
    pieces: Vec<Piece>,
}

fn command() -> impl Strategy<Value = Command> {
    (0..VOCABULARY.len()).prop_flat_map(|v| {
        let vocabulary = &VOCABULARY[v];
        let mut pieces: Vec<Piece> = Vec::new();
        pieces.extend(vocabulary.safe.iter().map(|w| Piece {
            words: w,
            allowed: true,
        }));
        pieces.extend(vocabulary.forbidden.iter().map(|w| Piece {
            words: w,
            allowed: false,
        }));
        let operands: Vec<Piece> = vocabulary
            .operands
            .iter()
            .map(|o| Piece {
                words: std::slice::from_ref(o),
                allowed: true,
            })
            .collect();
        let operands_first = vocabulary.operands_first;
        // Forbidden pieces are few; they still show up in about a third of the commands.
        let options = prop::collection::vec(prop::sample::select(pieces), 0..4);
        let operands = if operands.is_empty() {
            Just(Vec::new()).boxed()
        } else {
            prop::collection::vec(prop::sample::select(operands), 0..3).boxed()
        };
        (prop::sample::select(vocabulary.invocations), options, operands).prop_map(
            move |(invocation, options, operands)| {
                let pieces = if operands_first {
                    operands.into_iter().chain(options).collect()
                } else {
                    // Operands interleave with options, as getopt allows.
                    let mut pieces = options;
                    for (i, operand) in operands.into_iter().enumerate() {
                        let at = (i * 2).min(pieces.len());
                        pieces.insert(at, operand);
                    }
                    pieces
                };
                Command { invocation, pieces }
            },
        )
    })
}

/// How words are quoted: as little as needed, always single quotes, or double quotes where that is plain.
fn render_word(word: &str, style: u8) -> String {
    match style {
        1 => format!("'{}'", word.replace('\'', r"'\''")),
        2 if !word.contains(['"', '$', '`', '\\']) => format!("\"{word}\""),
        _ => quote(word),
    }
}

fn render(command: &Command, style: u8) -> String {
    command
        .invocation
        .0
        .iter()
        .copied()
        .chain(command.pieces.iter().flat_map(|p| p.words.iter().copied()))
        .map(|w| render_word(w, style))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reference: a line is allowed when every invocation and every piece in it is, and nothing was
/// injected.
fn reference(commands: &[Command], injection: &Option<(usize, &str)>) -> bool {
    injection.is_none()
        && commands
            .iter()
            .all(|c| c.invocation.1 && c.pieces.iter().all(|p| p.allowed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]
    #[test]
    fn the_check_agrees_with_the_reference(
        commands in prop::collection::vec(command(), 1..4),
        separators in prop::collection::vec(prop::sample::select(SEPARATORS), 3),
        injection in prop::option::weighted(0.2, (0..4usize, prop::sample::select(INJECTIONS))),
        style in 0..3u8,
        wrapped in any::<bool>(),
    ) {
        let mut line = String::new();
        for (i, command) in commands.iter().enumerate() {
            if i > 0 {
                line.push_str(separators[i - 1]);
            }
            line.push_str(&render(command, style));
            if let Some((at, text)) = injection
                && at.min(commands.len() - 1) == i
            {
                line.push_str(text);
            }
        }
        if wrapped {
            line = join(&["bash", "-c", &line]);
        }
        let expected = reference(&commands, &injection);
        let got = allowed(&line);
        prop_assert_eq!(got.is_ok(), expected, "{:?}: {:?}", line, got);
    }
}
