//! Whether a shell command only reads, decided from its exact words. While a blocking teachback waits for
//! review, an agent may run shell commands, but only ones that change nothing: a program agency knows,
//! with options from that program's list ([`programs`]), chained only with other such commands.
//!
//! Prefix matching is not enough: `git log --output=.agency/team.yaml`, `rg --pre sh`, `git diff
//! --ext-diff` and `find -exec` start like reads and write files or run programs. So the line is split as
//! the shell would split it ([`shell::split`], which refuses redirections, expansions and substitutions),
//! every command in it is matched against its grammar option by option, and whatever is not listed is
//! refused. A program is named, never a path, and no variable may be set in front of it
//! (`GIT_EXTERNAL_DIFF=x git diff`). `bash -c '...'` and `sh -c '...'` are read through to the script
//! they run, once.

pub mod programs;
pub mod shell;

use std::fmt;

use programs::{Arity, FIND_LEADING, FIND_NO_ARGUMENT, FIND_ONE_ARGUMENT, GIT_GLOBAL, Opt, Syntax};
pub use programs::{READ_ONLY_COMMANDS, ReadOnlyCommand};

/// Why a shell command is not read-only, said so the agent knows what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReadOnly(pub String);

impl fmt::Display for NotReadOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The read-only command `name` (`git diff`, `ls`), if agency has a grammar for it. Spaces are normalised.
pub fn command_named(name: &str) -> Option<&'static ReadOnlyCommand> {
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    READ_ONLY_COMMANDS.iter().find(|c| c.name == name)
}

/// Checks a command line: every command in it must be one of [`READ_ONLY_COMMANDS`] that `enabled`
/// accepts (by name), with only the options its grammar lists.
pub fn check(line: &str, enabled: &dyn Fn(&str) -> bool) -> Result<(), NotReadOnly> {
    check_line(line, enabled, 0)
}

/// `bash -c` nests at most this deep.
const MAX_NESTING: usize = 1;

fn check_line(line: &str, enabled: &dyn Fn(&str) -> bool, depth: usize) -> Result<(), NotReadOnly> {
    let commands = shell::split(line).map_err(|e| NotReadOnly(e.0))?;
    for words in &commands {
        check_command(words, enabled, depth)?;
    }
    Ok(())
}

fn check_command(words: &[String], enabled: &dyn Fn(&str) -> bool, depth: usize) -> Result<(), NotReadOnly> {
    let refuse = |why: String| Err(NotReadOnly(why));
    let Some(program) = words.first() else {
        return refuse("there is no command".into());
    };
    if program.contains('=') {
        return refuse(format!(
            "`{program}` sets an environment variable for the command, which can make a read run a program"
        ));
    }
    if program.contains('/') {
        return refuse(format!(
            "`{program}` is a path; read-only commands are run by name (a file in the worktree could be called `git`)"
        ));
    }
    if matches!(program.as_str(), "bash" | "sh") {
        return match words {
            [_, flag, script] if depth < MAX_NESTING && matches!(flag.as_str(), "-c" | "-lc") => {
                check_line(script, enabled, depth + 1)
            }
            _ => refuse(format!(
                "`{program}` is read through only as `{program} -c 'COMMAND'`"
            )),
        };
    }
    let (command, args) = find_command(words)?;
    if !enabled(command.name) {
        return refuse(format!("`{}` is not in teachback.readonly_bash", command.name));
    }
    match command.syntax {
        Syntax::Options {
            options,
            numeric_count,
            operands,
        } => check_options(command.name, args, options, numeric_count, operands),
        Syntax::Find => check_find(args),
    }
}

/// The command `words` runs, and the words after its name (and git's subcommand).
fn find_command(words: &[String]) -> Result<(&'static ReadOnlyCommand, &[String]), NotReadOnly> {
    let program = words[0].as_str();
    if program != "git" {
        let command = READ_ONLY_COMMANDS
            .iter()
            .find(|c| c.program == program)
            .ok_or_else(|| NotReadOnly(format!("`{program}` is not a read-only command agency knows")))?;
        return Ok((command, &words[1..]));
    }
    let mut at = 1;
    while let Some(word) = words.get(at).filter(|w| w.starts_with('-')) {
        if !GIT_GLOBAL.iter().any(|o| o.name == word) {
            return Err(NotReadOnly(format!(
                "git: `{word}` before the subcommand is not allowed (only --no-pager is)"
            )));
        }
        at += 1;
    }
    let Some(subcommand) = words.get(at) else {
        return Err(NotReadOnly("git without a subcommand".into()));
    };
    let command = READ_ONLY_COMMANDS
        .iter()
        .find(|c| c.program == "git" && c.subcommand == Some(subcommand.as_str()))
        .ok_or_else(|| {
            NotReadOnly(format!(
                "`git {subcommand}` is not a read-only command agency knows"
            ))
        })?;
    Ok((command, &words[at + 1..]))
}

fn lookup(options: &[&[Opt]], name: &str) -> Option<Opt> {
    options
        .iter()
        .flat_map(|list| list.iter())
        .find(|o| o.name == name)
        .copied()
}

/// getopt-style words: options anywhere before `--`, each from the list, with their values.
fn check_options(
    command: &str,
    args: &[String],
    options: &[&[Opt]],
    numeric_count: bool,
    operands: bool,
) -> Result<(), NotReadOnly> {
    let unknown = |option: &str| {
        NotReadOnly(format!(
            "{command}: `{option}` is not an option agency knows to be read-only"
        ))
    };
    // A value given as the next word may not look like an option: should agency be wrong about an
    // option taking a value, that word would be parsed as an option nobody checked.
    let next_value = |at: usize, option: &str| match args.get(at) {
        Some(value) if !value.starts_with('-') => Ok(()),
        Some(value) => {
            let attached = if option.starts_with("--") { "=" } else { "" };
            Err(NotReadOnly(format!(
                "{command}: the value of `{option}` may not start with `-` (found `{value}`); attach it: \
                 `{option}{attached}{value}`"
            )))
        }
        None => Err(NotReadOnly(format!("{command}: `{option}` needs a value"))),
    };
    let mut at = 0;
    let mut options_end = false;
    while let Some(word) = args.get(at) {
        at += 1;
        if options_end || !word.starts_with('-') || word == "-" {
            if !operands {
                return Err(NotReadOnly(format!(
                    "{command} takes no operands (found `{word}`)"
                )));
            }
            continue;
        }
        if word == "--" {
            options_end = true;
            continue;
        }
        let digits = &word[1..];
        if numeric_count && digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if word.starts_with("--") {
            let (name, attached) = match word.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (word.as_str(), None),
            };
            let option = lookup(options, name).ok_or_else(|| unknown(name))?;
            match (option.arity, attached) {
                (Arity::Flag, Some(_)) => {
                    return Err(NotReadOnly(format!("{command}: `{name}` takes no value")));
                }
                (Arity::Value, None) => {
                    next_value(at, name)?;
                    at += 1;
                }
                _ => {}
            }
            continue;
        }
        // Single letters, possibly clustered (`-la`); a letter taking a value ends the cluster.
        for (index, letter) in digits.char_indices() {
            let name = format!("-{letter}");
            let option = lookup(options, &name).ok_or_else(|| unknown(&name))?;
            let rest = &digits[index + letter.len_utf8()..];
            match option.arity {
                Arity::Flag => continue,
                Arity::Value if rest.is_empty() => {
                    next_value(at, &name)?;
                    at += 1;
                }
                Arity::Value | Arity::Attached => {}
            }
            break;
        }
    }
    Ok(())
}

/// `find [-H|-L|-P] [starting point...] [expression]`, the expression made only of listed tests,
/// operators and actions.
fn check_find(args: &[String]) -> Result<(), NotReadOnly> {
    let is = |list: &[&str], word: &str| list.contains(&word);
    let mut at = 0;
    while args.get(at).is_some_and(|w| is(FIND_LEADING, w)) {
        at += 1;
    }
    // Starting points run until the first word that starts an expression, as find reads them.
    while args
        .get(at)
        .is_some_and(|w| !w.starts_with('-') && !matches!(w.as_str(), "(" | ")" | "!" | ","))
    {
        at += 1;
    }
    while let Some(word) = args.get(at) {
        at += 1;
        if is(FIND_NO_ARGUMENT, word) {
            continue;
        }
        if is(FIND_ONE_ARGUMENT, word) {
            if args.get(at).is_none() {
                return Err(NotReadOnly(format!("find: `{word}` needs an argument")));
            }
            at += 1;
            continue;
        }
        return Err(NotReadOnly(format!(
            "find: `{word}` is not a test or action agency knows to be read-only (-exec, -delete and -fprint are not)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
