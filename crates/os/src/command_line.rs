//! Turning a configured command string (a goal's `verify`, a command runtime's invocation) into an argv.
//!
//! Commands never run through a shell, so the string is only *split*: whitespace separates words, `'…'` is
//! literal, `"…"` is literal except for backslash before `"`, `\`, `$` and `` ` ``, and a backslash outside
//! quotes escapes the next character. Nothing is expanded: no variables, globs, `~` or command substitution.
//! Anything whose meaning depends on a shell (pipes, `&&`, `;`, redirections, `$VAR`, `$(…)`, backticks,
//! subshells, comments) is refused with an error that says so, instead of being passed on as a literal word
//! that would silently do something else.

/// Why a command string could not be split into an argv.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    /// Nothing but whitespace.
    #[error("the command is empty")]
    Empty,
    /// A quote was opened and never closed.
    #[error("unterminated {quote} quote starting at column {column}")]
    UnterminatedQuote {
        /// `'` or `"`.
        quote: char,
        /// 1-based column of the opening quote.
        column: usize,
    },
    /// The string ends in a lone backslash.
    #[error("the command ends with a lone backslash")]
    TrailingBackslash,
    /// Shell syntax that only a shell could honour.
    #[error(
        "`{token}` at column {column} needs a shell ({what}), and commands run without one; \
         put the pipeline in a script and run the script instead"
    )]
    ShellSyntax {
        /// The offending text, e.g. `&&` or `$(`.
        token: String,
        /// What the token would mean to a shell.
        what: &'static str,
        /// 1-based column where it starts.
        column: usize,
    },
}

/// Splits `line` into an argv with shell-like quoting and no expansion; see the module docs.
pub fn split_command_line(line: &str) -> Result<Vec<String>, CommandLineError> {
    let chars: Vec<char> = line.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once any character or quote of it has been seen, so `''` yields an empty argument.
    let mut in_word = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\\' => match chars.get(i + 1) {
                // A line continuation joins lines, as in a shell.
                Some('\n') => i += 1,
                Some(&next) => {
                    word.push(next);
                    in_word = true;
                    i += 1;
                }
                None => return Err(CommandLineError::TrailingBackslash),
            },
            '\'' => {
                let close = find_from(&chars, i + 1, '\'')
                    .ok_or(CommandLineError::UnterminatedQuote { quote: '\'', column })?;
                word.extend(&chars[i + 1..close]);
                in_word = true;
                i = close;
            }
            '"' => {
                i = read_double_quoted(&chars, i, &mut word)?;
                in_word = true;
            }
            '#' if !in_word => return Err(shell_syntax("#", "a comment", column)),
            _ => {
                if let Some((token, what)) = shell_token(&chars, i) {
                    return Err(shell_syntax(&token, what, column));
                }
                word.push(c);
                in_word = true;
            }
        }
        i += 1;
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(CommandLineError::Empty);
    }
    Ok(words)
}

/// Reads a `"…"` section opening at `open` into `word`; returns the index of the closing quote.
fn read_double_quoted(chars: &[char], open: usize, word: &mut String) -> Result<usize, CommandLineError> {
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok(i),
            '\\' if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                word.push(chars[i + 1]);
                i += 1;
            }
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 1,
            // Inside double quotes a shell still expands these; refusing beats passing them literally.
            '$' | '`' => {
                if let Some((token, what)) = shell_token(chars, i) {
                    return Err(shell_syntax(&token, what, i + 1));
                }
                word.push(chars[i]);
            }
            c => word.push(c),
        }
        i += 1;
    }
    Err(CommandLineError::UnterminatedQuote {
        quote: '"',
        column: open + 1,
    })
}

/// The shell construct starting at `i`, if any: its text and what it would mean.
fn shell_token(chars: &[char], i: usize) -> Option<(String, &'static str)> {
    let next = chars.get(i + 1).copied();
    let (len, what) = match (chars[i], next) {
        ('\n', _) => return Some(("newline".to_owned(), "a command separator")),
        ('|', Some('|')) => (2, "run the next command on failure"),
        ('|', _) => (1, "a pipe"),
        ('&', Some('&')) => (2, "run the next command on success"),
        ('&', Some('>')) => (2, "a redirection"),
        ('&', _) => (1, "run in the background"),
        (';', _) => (1, "a command separator"),
        ('>', Some('>')) => (2, "a redirection"),
        ('>' | '<', _) => (1, "a redirection"),
        ('(' | ')', _) => (1, "a subshell"),
        ('`', _) => (1, "command substitution"),
        ('$', Some('(')) => (2, "command substitution"),
        ('$', Some(c)) if c == '{' || c.is_ascii_alphanumeric() || "_?@*#!$-".contains(c) => {
            (2, "variable expansion")
        }
        _ => return None,
    };
    Some((chars[i..i + len].iter().collect(), what))
}

fn shell_syntax(token: &str, what: &'static str, column: usize) -> CommandLineError {
    CommandLineError::ShellSyntax {
        token: token.to_owned(),
        what,
        column,
    }
}

fn find_from(chars: &[char], from: usize, wanted: char) -> Option<usize> {
    chars[from..]
        .iter()
        .position(|&c| c == wanted)
        .map(|offset| from + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Vec<String> {
        split_command_line(line).unwrap()
    }

    #[test]
    fn splits_plain_words_on_any_whitespace_run() {
        assert_eq!(
            split("  cargo   test\t-p agency-exec "),
            ["cargo", "test", "-p", "agency-exec"]
        );
    }

    #[test]
    fn quotes_group_words_and_expand_nothing() {
        assert_eq!(
            split(r#"pytest -k 'a and b' "tests/x y.py""#),
            ["pytest", "-k", "a and b", "tests/x y.py"]
        );
        assert_eq!(
            split(r#"echo '$HOME' "a\"b" 'it'\''s'"#),
            ["echo", "$HOME", "a\"b", "it's"]
        );
        assert_eq!(
            split(r#"echo "back\\slash" "keep\n""#),
            ["echo", "back\\slash", "keep\\n"]
        );
        assert_eq!(split("echo *.rs ~ a$"), ["echo", "*.rs", "~", "a$"]);
    }

    #[test]
    fn quoted_operators_are_plain_text() {
        assert_eq!(
            split(r#"grep -E 'a|b' "x && y" ';'"#),
            ["grep", "-E", "a|b", "x && y", ";"]
        );
    }

    #[test]
    fn backslash_escapes_outside_quotes() {
        assert_eq!(split(r"touch a\ b \| \$x"), ["touch", "a b", "|", "$x"]);
        assert_eq!(split("make \\\n  test"), ["make", "test"]);
    }

    #[test]
    fn empty_quotes_are_an_empty_argument() {
        assert_eq!(split("prog '' \"\""), ["prog", "", ""]);
    }

    #[test]
    fn refuses_every_shell_operator_with_a_hint() {
        let cases = [
            ("make && make test", "&&", 6),
            ("a || b", "||", 3),
            ("cat x | wc", "|", 7),
            ("sleep 1 &", "&", 9),
            ("a; b", ";", 2),
            ("a\nb", "newline", 2),
            ("echo > out", ">", 6),
            ("echo >> out", ">>", 6),
            ("wc < in", "<", 4),
            ("echo $(date)", "$(", 6),
            ("echo `date`", "`", 6),
            ("echo $HOME", "$H", 6),
            ("echo ${HOME}", "${", 6),
            ("echo \"$(date)\"", "$(", 7),
            ("(cd x)", "(", 1),
            ("cargo test # all", "#", 12),
        ];
        for (line, token, column) in cases {
            match split_command_line(line) {
                Err(CommandLineError::ShellSyntax {
                    token: t, column: c, ..
                }) => {
                    assert_eq!((t.as_str(), c), (token, column), "{line:?}");
                }
                other => panic!("{line:?}: expected a shell-syntax error, got {other:?}"),
            }
        }
        let message = split_command_line("make && make test").unwrap_err().to_string();
        assert!(message.contains("script"), "{message}");
    }

    #[test]
    fn reports_malformed_input() {
        assert_eq!(split_command_line("   "), Err(CommandLineError::Empty));
        assert_eq!(
            split_command_line("echo 'oops"),
            Err(CommandLineError::UnterminatedQuote {
                quote: '\'',
                column: 6
            })
        );
        assert_eq!(
            split_command_line("echo \"oops"),
            Err(CommandLineError::UnterminatedQuote {
                quote: '"',
                column: 6
            })
        );
        assert_eq!(
            split_command_line("echo \\"),
            Err(CommandLineError::TrailingBackslash)
        );
    }
}
