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

/// Splits `line` into simple commands, each a list of words with quotes and escapes removed. A line with
/// no command at all is refused too: there is nothing to allow.
pub fn split(line: &str) -> Result<Vec<Vec<String>>, Unsplittable> {
    let refuse = |what: &str| Err(Unsplittable(what.to_string()));
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    // The word being read, and whether any of it has been read (`''` is an empty word, not none).
    let mut word = String::new();
    let mut in_word = false;
    // Whether the last separator was `&&`, `||` or `|`, which the line may not end with.
    let mut needs_command = false;
    let mut chars = line.chars().peekable();

    fn end_word(words: &mut Vec<String>, word: &mut String, in_word: &mut bool) {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    }
    fn end_command(
        commands: &mut Vec<Vec<String>>,
        words: &mut Vec<String>,
        separator: &str,
    ) -> Result<(), Unsplittable> {
        if words.is_empty() {
            return Err(Unsplittable(format!("`{separator}` with no command before it")));
        }
        commands.push(std::mem::take(words));
        Ok(())
    }

    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut words, &mut word, &mut in_word),
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return refuse("a single quote is not closed"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return refuse("a double quote is not closed"),
                        },
                        Some('$') => return refuse("`$` expands inside double quotes"),
                        Some('`') => return refuse("a backtick substitutes a command"),
                        Some(c) => word.push(c),
                        None => return refuse("a double quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                // A line continuation joins the lines.
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return refuse("the line ends with a backslash"),
            },
            '\n' => {
                end_word(&mut words, &mut word, &mut in_word);
                // A blank line, or a newline after `&&`, `||` or `|`, ends no command.
                if !words.is_empty() {
                    end_command(&mut commands, &mut words, "newline")?;
                    needs_command = false;
                }
            }
            ';' => {
                end_word(&mut words, &mut word, &mut in_word);
                if chars.peek() == Some(&';') {
                    return refuse("`;;` belongs to a case statement");
                }
                end_command(&mut commands, &mut words, ";")?;
                needs_command = false;
            }
            '&' => {
                end_word(&mut words, &mut word, &mut in_word);
                if chars.next_if_eq(&'&').is_none() {
                    return refuse("`&` runs a command in the background or redirects");
                }
                end_command(&mut commands, &mut words, "&&")?;
                needs_command = true;
            }
            '|' => {
                end_word(&mut words, &mut word, &mut in_word);
                match chars.peek() {
                    Some('|') => {
                        chars.next();
                        end_command(&mut commands, &mut words, "||")?;
                    }
                    Some('&') => return refuse("`|&` redirects standard error"),
                    _ => end_command(&mut commands, &mut words, "|")?,
                }
                needs_command = true;
            }
            '>' | '<' => return refuse("a redirection (`>`, `>>`, `<`, `<(`) reads or writes a file"),
            '$' => return refuse("`$` expands a variable or substitutes a command"),
            '`' => return refuse("a backtick substitutes a command"),
            '(' | ')' => return refuse("parentheses start a subshell or a substitution"),
            '{' | '}' => return refuse("braces expand into several words or group commands"),
            '*' | '?' | '[' => return refuse("an unquoted glob (`*`, `?`, `[`) expands to file names"),
            '#' if !in_word => return refuse("`#` starts a comment"),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    } else if needs_command {
        return refuse("the line ends with `&&`, `||` or `|`, which need a command after them");
    }
    if commands.is_empty() {
        return refuse("there is no command");
    }
    Ok(commands)
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
