//! Python's `shlex.split(line, comments=True)` (POSIX mode), which Ansible's INI inventory
//! uses to cut a host line into the host and its `key=value` words.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShlexError {
    NoClosingQuotation,
    NoEscapedCharacter,
}

impl std::fmt::Display for ShlexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Python's own wording, which Ansible users search for.
        f.write_str(match self {
            ShlexError::NoClosingQuotation => "No closing quotation",
            ShlexError::NoEscapedCharacter => "No escaped character",
        })
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Between,
    Word,
    Quoted(char),
    Escaped { resume: Resume },
}

#[derive(Clone, Copy, PartialEq)]
enum Resume {
    Word,
    Quoted(char),
}

/// Splits like a POSIX shell: quotes group and are removed, `\` escapes outside single
/// quotes, and `#` starts a comment even in the middle of a word (as shlex does).
pub fn split(line: &str) -> Result<Vec<String>, ShlexError> {
    let mut words = Vec::new();
    let mut token = String::new();
    let mut quoted = false;
    let mut state = State::Between;
    let flush = |token: &mut String, quoted: &mut bool, words: &mut Vec<String>| {
        if !token.is_empty() || *quoted {
            words.push(std::mem::take(token));
        }
        *quoted = false;
    };
    for c in line.chars() {
        match state {
            State::Between | State::Word => {
                if c.is_ascii_whitespace() {
                    flush(&mut token, &mut quoted, &mut words);
                    state = State::Between;
                } else if c == '#' {
                    flush(&mut token, &mut quoted, &mut words);
                    return Ok(words);
                } else if c == '\\' {
                    state = State::Escaped {
                        resume: Resume::Word,
                    };
                } else if c == '\'' || c == '"' {
                    state = State::Quoted(c);
                } else {
                    token.push(c);
                    state = State::Word;
                }
            }
            State::Quoted(q) => {
                quoted = true;
                if c == q {
                    state = State::Word;
                } else if c == '\\' && q == '"' {
                    state = State::Escaped {
                        resume: Resume::Quoted(q),
                    };
                } else {
                    token.push(c);
                }
            }
            State::Escaped { resume } => {
                // Inside double quotes only `"` and `\` are escapable; others keep the `\`.
                if let Resume::Quoted(q) = resume
                    && c != q
                    && c != '\\'
                {
                    token.push('\\');
                }
                token.push(c);
                state = match resume {
                    Resume::Word => State::Word,
                    Resume::Quoted(q) => State::Quoted(q),
                };
            }
        }
    }
    match state {
        State::Quoted(_) => Err(ShlexError::NoClosingQuotation),
        State::Escaped { .. } => Err(ShlexError::NoEscapedCharacter),
        State::Between | State::Word => {
            flush(&mut token, &mut quoted, &mut words);
            Ok(words)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split(s).unwrap()
    }

    #[test]
    fn splits_and_unquotes() {
        assert_eq!(words("h1 a=1  b=2"), ["h1", "a=1", "b=2"]);
        assert_eq!(
            words(r#"h1 name="two words" x='it''s'"#),
            ["h1", "name=two words", "x=its"]
        );
        assert_eq!(words(r#"h secret="'03#pa33'""#), ["h", "secret='03#pa33'"]);
        assert_eq!(words(r#"a\ b "q\"x\y""#), ["a b", "q\"x\\y"]);
        assert_eq!(words("h ''"), ["h", ""]);
    }

    #[test]
    fn comments_end_the_line_even_inside_a_word() {
        assert_eq!(words("h1 a=1 # note"), ["h1", "a=1"]);
        assert_eq!(words("h1 pw=abc#def x=1"), ["h1", "pw=abc"]);
        assert_eq!(words("h1 pw='abc#def'"), ["h1", "pw=abc#def"]);
    }

    #[test]
    fn reports_unbalanced_quotes() {
        assert_eq!(split("h a='x"), Err(ShlexError::NoClosingQuotation));
        assert_eq!(split("h a\\"), Err(ShlexError::NoEscapedCharacter));
    }
}
