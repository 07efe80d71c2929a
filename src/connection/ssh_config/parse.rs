//! One line of an ssh_config file split as OpenSSH splits it: the keyword ends at
//! whitespace or a single `=`, the arguments are words with `"`/`'` quoting and `\`
//! escapes, and an unquoted word starting with `#` ends the line.

/// Where a value came from, for messages: `~/.ssh/config line 4`, or `command-line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: String,
    pub line: usize,
}

impl Origin {
    pub const COMMAND_LINE: &str = "command-line";
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{} line {}", self.file, self.line)
        }
    }
}

/// A keyword (lowercased), its arguments, and the text after the keyword unsplit; `None`
/// for blank and comment lines.
pub fn split_line(line: &str) -> Result<Option<(String, Vec<String>, String)>, String> {
    let line = line.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{c}');
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let end = line
        .find(|c: char| c.is_ascii_whitespace() || c == '=')
        .unwrap_or(line.len());
    let keyword = line[..end].to_ascii_lowercase();
    let mut rest = line[end..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    if let Some(after) = rest.strip_prefix('=') {
        rest = after.trim_start_matches(|c: char| c.is_ascii_whitespace());
    }
    if rest.is_empty() {
        return Err(format!("no argument after keyword \"{keyword}\""));
    }
    let args = split_args(rest).ok_or_else(|| "invalid quotes".to_string())?;
    if args.is_empty() {
        return Err(format!("no argument after keyword \"{keyword}\""));
    }
    Ok(Some((keyword, args, rest.to_string())))
}

/// OpenSSH's argv_split: None when a quote is left open.
pub fn split_args(text: &str) -> Option<Vec<String>> {
    let mut args = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Some(args);
        };
        if first == '#' {
            return Some(args);
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.peek() {
            if quote.is_none() && c.is_ascii_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\\' => match chars.peek().copied() {
                    Some(next @ ('\\' | '"' | '\'')) => {
                        chars.next();
                        word.push(next);
                    }
                    Some(' ') if quote.is_none() => {
                        chars.next();
                        word.push(' ');
                    }
                    _ => word.push('\\'),
                },
                '"' | '\'' if quote.is_none() => quote = Some(c),
                c if Some(c) == quote => quote = None,
                c => word.push(c),
            }
        }
        if quote.is_some() {
            return None;
        }
        args.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> (String, Vec<String>) {
        let (keyword, args, _) = split_line(line).unwrap().unwrap();
        (keyword, args)
    }

    #[test]
    fn keyword_forms() {
        assert_eq!(split("Port 22"), ("port".into(), vec!["22".into()]));
        assert_eq!(split("  PORT=22"), ("port".into(), vec!["22".into()]));
        assert_eq!(split("Port = 22  "), ("port".into(), vec!["22".into()]));
        assert_eq!(split("\tPort\t22\n"), ("port".into(), vec!["22".into()]));
        assert_eq!(split_line("# Port 22").unwrap(), None);
        assert_eq!(split_line("   ").unwrap(), None);
    }

    #[test]
    fn commands_keep_their_text() {
        let (_, _, raw) = split_line("ProxyCommand = nc -X connect -x 'p:1' %h %p")
            .unwrap()
            .unwrap();
        assert_eq!(raw, "nc -X connect -x 'p:1' %h %p");
    }

    #[test]
    fn quoted_words_and_comments() {
        assert_eq!(
            split(r#"ProxyCommand "ssh -W %h:%p" 'gw x' a\ b # rest"#).1,
            vec!["ssh -W %h:%p", "gw x", "a b"]
        );
        assert_eq!(split(r#"User "a\"b""#).1, vec![r#"a"b"#]);
        assert_eq!(split("IdentityFile \"\"").1, vec![""]);
        assert_eq!(split_line("User \"a b").unwrap_err(), "invalid quotes");
        assert_eq!(
            split_line("Port").unwrap_err(),
            "no argument after keyword \"port\""
        );
        assert_eq!(
            split_line("Port # nothing").unwrap_err(),
            "no argument after keyword \"port\""
        );
    }
}
