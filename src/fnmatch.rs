//! Shell-style name patterns: Python's `fnmatch.fnmatchcase` (what Ansible's host
//! patterns, `--start-at-task`, setup's `filter` and the fileglob lookup use), with the
//! two variants built on it: `glob`'s hidden-name rule and OpenSSH's `match_pattern`.
//!
//! A pattern is compiled once into tokens and matched without backtracking beyond the
//! last star, so long names and many stars stay linear-ish. No regex: fnmatch's bracket
//! rules (a `]` first in a set is a member, an unclosed `[` is literal, reversed ranges are
//! empty, no escapes) are simpler to state directly than to translate.
//!
//! This module sits at the bottom of the dependency graph: it uses nothing from the crate.

/// A compiled pattern; `matches` is case sensitive and whole-name, as `fnmatchcase`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Star,
    AnyChar,
    Literal(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Pattern {
    /// Python's fnmatch syntax: `*`, `?`, `[abc]`, `[a-z]`, `[!abc]`; everything else,
    /// backslash included, is literal.
    pub fn new(pattern: &str) -> Pattern {
        let p: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < p.len() {
            let c = p[i];
            i += 1;
            match c {
                '*' => push_star(&mut tokens),
                '?' => tokens.push(Token::AnyChar),
                '[' => match class_at(&p, i) {
                    Some((class, next)) => {
                        tokens.push(class);
                        i = next;
                    }
                    None => tokens.push(Token::Literal('[')),
                },
                other => tokens.push(Token::Literal(other)),
            }
        }
        Pattern { tokens }
    }

    /// OpenSSH's `match_pattern` (match.c), for known_hosts and ssh_config host lists:
    /// only `*` and `?` are special, `[` is an ordinary character.
    pub fn openssh(pattern: &str) -> Pattern {
        let mut tokens = Vec::new();
        for c in pattern.chars() {
            match c {
                '*' => push_star(&mut tokens),
                '?' => tokens.push(Token::AnyChar),
                other => tokens.push(Token::Literal(other)),
            }
        }
        Pattern { tokens }
    }

    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        let tokens = &self.tokens;
        // Two pointers, backtracking only to the last star: a later star can always
        // absorb what an earlier one would have.
        let (mut t, mut n) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            if t < tokens.len() && tokens[t] == Token::Star {
                star = Some((t, n));
                t += 1;
            } else if t < tokens.len() && single(&tokens[t], name[n]) {
                t += 1;
                n += 1;
            } else if let Some((st, sn)) = star {
                t = st + 1;
                n = sn + 1;
                star = Some((st, sn + 1));
            } else {
                return false;
            }
        }
        tokens[t..].iter().all(|tok| *tok == Token::Star)
    }
}

/// `fnmatch.fnmatchcase(name, pattern)`, compiling the pattern for this one call.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    Pattern::new(pattern).matches(name)
}

/// One path component as Python's `glob.glob` matches it: fnmatch, except that a name
/// starting with `.` is only matched by a pattern starting with `.` (`glob._ishidden`).
pub fn glob_component(pattern: &str, name: &str) -> bool {
    (!name.starts_with('.') || pattern.starts_with('.')) && fnmatch(pattern, name)
}

fn push_star(tokens: &mut Vec<Token>) {
    if tokens.last() != Some(&Token::Star) {
        tokens.push(Token::Star);
    }
}

/// The set starting after the `[` at `start - 1`, and the index after its `]`; `None`
/// when it is never closed (fnmatch then reads the `[` as a literal).
fn class_at(p: &[char], start: usize) -> Option<(Token, usize)> {
    let mut j = start;
    if p.get(j) == Some(&'!') {
        j += 1;
    }
    // A `]` right after `[` or `[!` is a member, not the end.
    if p.get(j) == Some(&']') {
        j += 1;
    }
    while j < p.len() && p[j] != ']' {
        j += 1;
    }
    if j >= p.len() {
        return None;
    }
    let mut body = &p[start..j];
    let negated = body.first() == Some(&'!');
    if negated {
        body = &body[1..];
    }
    let mut ranges = Vec::new();
    let mut k = 0;
    while k < body.len() {
        // A reversed range (`z-a`) is kept and matches nothing, as fnmatch drops it.
        if k + 2 < body.len() && body[k + 1] == '-' {
            ranges.push((body[k], body[k + 2]));
            k += 3;
        } else {
            ranges.push((body[k], body[k]));
            k += 1;
        }
    }
    Some((Token::Class { negated, ranges }, j + 1))
}

fn single(token: &Token, c: char) -> bool {
    match token {
        Token::AnyChar => true,
        Token::Literal(l) => *l == c,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated
        }
        Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_as_python() {
        // Each case agrees with Python 3.12's fnmatch.fnmatchcase.
        for (pattern, name, expected) in [
            ("Install*", "Install packages", true),
            ("*pack?ges", "Install packages", true),
            ("[Ii]nstall", "install", true),
            ("[!a]x", "bx", true),
            ("[!a]x", "ax", false),
            ("v[0-9]", "v7", true),
            ("a[b", "a[b", true),
            ("[]]", "]", true),
            ("[!]]", "]", false),
            ("[!]]", "a", true),
            ("[a-]", "-", true),
            ("[z-a]", "m", false),
            ("[!z-a]", "m", true),
            ("[a-c-e]", "-", true),
            ("[a-c-e]", "d", false),
            ("a\\*", "a\\b", true),
            ("Install", "Install packages", false),
            ("install*", "Install", false),
            ("*", "", true),
            ("*", ".hidden", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("web[0-1][0-9]", "web07", true),
            ("*.example.com", "db.example.com", true),
            ("?", "é", true),
        ] {
            assert_eq!(fnmatch(pattern, name), expected, "{pattern} ~ {name}");
        }
    }

    #[test]
    fn glob_hides_dot_names_unless_the_pattern_starts_with_a_dot() {
        assert!(glob_component("*.conf", "a.conf"));
        assert!(!glob_component("*.conf", "a.conf.bak"));
        assert!(!glob_component("*", ".hidden"));
        assert!(!glob_component("[.]hidden", ".hidden"));
        assert!(glob_component(".*", ".hidden"));
    }

    #[test]
    fn openssh_patterns_have_no_sets() {
        let m = |p: &str, n: &str| Pattern::openssh(p).matches(n);
        assert!(m("*.example.com", "web.example.com"));
        assert!(!m("*.example.com", "example.com"));
        assert!(m("web?", "web1"));
        assert!(!m("web?", "web12"));
        assert!(m("*", "[127.0.0.1]:2222"));
        assert!(m("[127.0.0.*]:2222", "[127.0.0.1]:2222"));
        assert!(!m("[12]", "1"));
    }
}
