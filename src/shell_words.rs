//! Words of a command line as a POSIX shell (and Python's `shlex.split`, which Ansible
//! uses for `command` and ssh arguments) splits them. Errors keep Python's wording,
//! which Ansible users know.

/// Python's `shlex.quote`: a word as one shell word, quoted only when it must be.
pub fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// Splits a command line the way a POSIX shell would split words: whitespace separates,
/// single quotes are literal, double quotes allow `\"`, `\\`, `\$`, `` \` ``, and a
/// backslash outside quotes escapes the next character.
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("No closing quotation in `{line}`")),
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
                            None => return Err(format!("No closing quotation in `{line}`")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("No closing quotation in `{line}`")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return Err(format!("No escaped character in `{line}`")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_splitting() {
        assert_eq!(
            split(r#"-o 'A=b c' -o"D=e f" g\ h "x\"y" '' end"#).unwrap(),
            vec!["-o", "A=b c", "-oD=e f", "g h", "x\"y", "", "end"]
        );
        assert!(split("-o 'open").is_err());
        assert!(split("").unwrap().is_empty());
    }

    #[test]
    fn splits_like_shlex() {
        let s = |l: &str| split(l).unwrap();
        assert_eq!(s("echo hello  world"), ["echo", "hello", "world"]);
        assert_eq!(s("echo 'a b' \"c d\""), ["echo", "a b", "c d"]);
        assert_eq!(s(r#"echo "a \"q\" \$x \n""#), ["echo", r#"a "q" $x \n"#]);
        assert_eq!(s(r"echo a\ b \'x"), ["echo", "a b", "'x"]);
        assert_eq!(s("echo ''"), ["echo", ""]);
        assert_eq!(s("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(s("  "), Vec::<String>::new());
        assert_eq!(s("echo $HOME > /tmp/x"), ["echo", "$HOME", ">", "/tmp/x"]);
        assert!(split("echo 'open").is_err());
        assert!(split("echo \"open").is_err());
    }
}
