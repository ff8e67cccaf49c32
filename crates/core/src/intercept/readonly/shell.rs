//! A command line split into the simple commands a POSIX shell would run, for the read-only check. Only the
//! part of the shell language whose meaning is fixed by the text alone is accepted: words, quotes, escapes,
//! and the separators `;`, `&&`, `||`, `|` and newline between commands. Everything whose effect depends on
//! something else — a redirection, an expansion (`$`, backticks, globs, braces), a subshell, a background
//! job, a comment — is refused, so the words checked are exactly the words the program receives.

use std::fmt;

/// Why a command line is not split: it uses shell syntax the read-only check does not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsplittable(pub String);

impl fmt::Display for Unsplittable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The commands read so far, and the word being read.
#[derive(Debug, Default)]
struct Splitter {
    commands: Vec<Vec<String>>,
    words: Vec<String>,
    word: String,
    /// Whether any of `word` has been read: `''` is an empty word, not none.
    in_word: bool,
    /// Whether the last separator was `&&`, `||` or `|`, which the line may not end with.
    needs_command: bool,
}

impl Splitter {
    fn end_word(&mut self) {
        if self.in_word {
            self.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    /// Ends the command before `separator`, which must have one.
    fn end_command(&mut self, separator: &str) -> Result<(), Unsplittable> {
        self.end_word();
        if self.words.is_empty() {
            return Err(Unsplittable(format!("`{separator}` with no command before it")));
        }
        self.commands.push(std::mem::take(&mut self.words));
        self.needs_command = matches!(separator, "&&" | "||" | "|");
        Ok(())
    }
}

/// Splits `line` into simple commands, each a list of words with quotes and escapes removed. A line with
/// no command at all is refused too: there is nothing to allow.
pub fn split(line: &str) -> Result<Vec<Vec<String>>, Unsplittable> {
    let refuse = |what: &str| Err(Unsplittable(what.to_string()));
    let mut at = Splitter::default();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => at.end_word(),
            '\'' => {
                at.in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => at.word.push(c),
                        None => return refuse("a single quote is not closed"),
                    }
                }
            }
            '"' => {
                at.in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => at.word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                at.word.push('\\');
                                at.word.push(c);
                            }
                            None => return refuse("a double quote is not closed"),
                        },
                        Some('$') => return refuse("`$` expands inside double quotes"),
                        Some('`') => return refuse("a backtick substitutes a command"),
                        Some(c) => at.word.push(c),
                        None => return refuse("a double quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                // A line continuation joins the lines.
                Some('\n') => {}
                Some(c) => {
                    at.in_word = true;
                    at.word.push(c);
                }
                None => return refuse("the line ends with a backslash"),
            },
            '\n' => {
                at.end_word();
                // A blank line, or a newline after `&&`, `||` or `|`, ends no command.
                if !at.words.is_empty() {
                    at.end_command("newline")?;
                }
            }
            ';' if chars.peek() == Some(&';') => return refuse("`;;` belongs to a case statement"),
            ';' => at.end_command(";")?,
            '&' if chars.next_if_eq(&'&').is_some() => at.end_command("&&")?,
            '&' => return refuse("`&` runs a command in the background or redirects"),
            '|' if chars.next_if_eq(&'|').is_some() => at.end_command("||")?,
            '|' if chars.peek() == Some(&'&') => return refuse("`|&` redirects standard error"),
            '|' => at.end_command("|")?,
            '>' | '<' => return refuse("a redirection (`>`, `>>`, `<`, `<(`) reads or writes a file"),
            '$' => return refuse("`$` expands a variable or substitutes a command"),
            '`' => return refuse("a backtick substitutes a command"),
            '(' | ')' => return refuse("parentheses start a subshell or a substitution"),
            '{' | '}' => return refuse("braces expand into several words or group commands"),
            '*' | '?' | '[' => return refuse("an unquoted glob (`*`, `?`, `[`) expands to file names"),
            '#' if !at.in_word => return refuse("`#` starts a comment"),
            c => {
                at.in_word = true;
                at.word.push(c);
            }
        }
    }
    at.end_word();
    if !at.words.is_empty() {
        at.commands.push(at.words);
    } else if at.needs_command {
        return refuse("the line ends with `&&`, `||` or `|`, which need a command after them");
    }
    if at.commands.is_empty() {
        return refuse("there is no command");
    }
    Ok(at.commands)
}

/// `argv` as one command line that [`split`] reads back as exactly `argv`: each word single-quoted unless
/// it is plain.
pub fn join(argv: &[impl AsRef<str>]) -> String {
    argv.iter()
        .map(|word| quote(word.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word, quoted when it holds anything but letters, digits and `-_./:=@%+,`.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
