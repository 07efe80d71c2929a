//! Python's `re`, for Ansible's regex filters and tests.
//!
//! Every pattern the `regex` crate accepts runs there, in linear time. That crate refuses
//! look-around (`(?=..)`, `(?<=..)`, `(?!..)`, `(?<!..)`) and back-references (`\1`,
//! `(?P=name)`), which Python has and playbooks use (`regex_replace('(?<==)old', ..)`):
//! only a pattern it refuses goes to fancy-regex, a backtracking engine with Python's
//! syntax for them, bounded by its backtrack limit so a pathological pattern fails
//! instead of hanging.

use std::fmt;

/// A compiled Python pattern.
pub(crate) struct PyRegex {
    engine: Engine,
}

enum Engine {
    Linear(regex::Regex),
    Backtracking(fancy_regex::Regex),
}

/// Where a match may lie, as Python's `re.search`, `re.match` and `re.fullmatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Search,
    Start,
    Full,
}

/// A pattern that neither engine compiles, or a match that ran out of backtracking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyRegexError(String);

impl fmt::Display for PyRegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text of each group of one match (`None` for a group that did not take part).
pub(crate) type Groups = Vec<Option<String>>;

/// The byte range of each group of one match (`None` for a group that did not take part).
pub(crate) type Spans = Vec<Option<(usize, usize)>>;

/// Python's words for a syntax error the `regex` crate reports in its own, for the
/// errors playbooks run into (a quantifier with nothing before it): `nothing to repeat at
/// position 0`. `prefix` is how many characters were put before the user's pattern.
fn python_message(refused: &str, prefix: usize) -> Option<String> {
    if !refused.contains("repetition operator missing expression") {
        return None;
    }
    // The crate's message quotes the pattern on one line and puts a caret under the fault.
    let caret = refused.lines().find(|l| l.trim() == "^")?;
    let column = caret.find('^')?.checked_sub(4)?;
    Some(format!(
        "nothing to repeat at position {}",
        column.saturating_sub(prefix)
    ))
}

impl PyRegex {
    pub(crate) fn new(
        pattern: &str,
        anchor: Anchor,
        ignorecase: bool,
        multiline: bool,
    ) -> Result<PyRegex, PyRegexError> {
        // Python's `\Z` is the very end of the text: `\z` in both engines.
        let body = pattern.replace(r"\Z", r"\z");
        // Where the user's pattern starts in what is compiled, for error positions.
        let lead = if anchor == Anchor::Search {
            0
        } else {
            r"\A(?:".len()
        };
        let full = match anchor {
            Anchor::Search => body,
            Anchor::Start => format!(r"\A(?:{body})"),
            Anchor::Full => format!(r"\A(?:{body})\z"),
        };
        let linear = regex::RegexBuilder::new(&full)
            .case_insensitive(ignorecase)
            .multi_line(multiline)
            .build();
        let refused = match linear {
            Ok(re) => {
                return Ok(PyRegex {
                    engine: Engine::Linear(re),
                });
            }
            Err(e) => e.to_string(),
        };
        // Whatever the linear engine refuses gets a second chance: Python's `(?P=name)`
        // reads as a bad flag to it, not as the back-reference it is.
        match fancy_regex::RegexBuilder::new(&full)
            .case_insensitive(ignorecase)
            .multi_line(multiline)
            .build()
        {
            Ok(re) => Ok(PyRegex {
                engine: Engine::Backtracking(re),
            }),
            // The linear engine's message is the better one, unless it only objected to
            // what the backtracking engine has.
            Err(e) if refused.contains("look-around") || refused.contains("backreferences") => Err(
                PyRegexError(format!("invalid regular expression {pattern:?}: {e}")),
            ),
            Err(_) => Err(PyRegexError(format!(
                "invalid regular expression {pattern:?}: {}",
                python_message(&refused, lead).unwrap_or(refused)
            ))),
        }
    }

    pub(crate) fn is_match(&self, text: &str) -> Result<bool, PyRegexError> {
        match &self.engine {
            Engine::Linear(re) => Ok(re.is_match(text)),
            Engine::Backtracking(re) => re.is_match(text).map_err(runtime),
        }
    }

    /// The number of groups, without the whole match.
    pub(crate) fn group_count(&self) -> usize {
        match &self.engine {
            Engine::Linear(re) => re.captures_len() - 1,
            Engine::Backtracking(re) => re.captures_len() - 1,
        }
    }

    /// The index of the group `(?P<name>...)`.
    pub(crate) fn group_index(&self, name: &str) -> Option<usize> {
        match &self.engine {
            Engine::Linear(re) => re.capture_names().position(|n| n == Some(name)),
            Engine::Backtracking(re) => re.capture_names().position(|n| n == Some(name)),
        }
    }

    /// Each named group `(?P<name>...)` with its index, in the pattern's order (what
    /// Python's `groupdict()` is keyed by).
    pub(crate) fn group_names(&self) -> Vec<(usize, String)> {
        let named = |(i, n): (usize, Option<&str>)| n.map(|n| (i, n.to_string()));
        match &self.engine {
            Engine::Linear(re) => re.capture_names().enumerate().filter_map(named).collect(),
            Engine::Backtracking(re) => re.capture_names().enumerate().filter_map(named).collect(),
        }
    }

    /// The groups of the first match (index 0 is the whole match).
    pub(crate) fn captures(&self, text: &str) -> Result<Option<Groups>, PyRegexError> {
        Ok(self.captures_all(text, 1)?.pop())
    }

    /// The groups of up to `limit` matches, left to right (`usize::MAX` for all).
    pub(crate) fn captures_all(
        &self,
        text: &str,
        limit: usize,
    ) -> Result<Vec<Groups>, PyRegexError> {
        let n = self.group_count() + 1;
        match &self.engine {
            Engine::Linear(re) => Ok(re
                .captures_iter(text)
                .take(limit)
                .map(|caps| {
                    (0..n)
                        .map(|i| caps.get(i).map(|m| m.as_str().to_string()))
                        .collect()
                })
                .collect()),
            Engine::Backtracking(re) => re
                .captures_iter(text)
                .take(limit)
                .map(|caps| {
                    let caps = caps.map_err(runtime)?;
                    Ok((0..n)
                        .map(|i| caps.get(i).map(|m| m.as_str().to_string()))
                        .collect())
                })
                .collect(),
        }
    }

    /// Replaces the first `count` matches (all for 0); `replacement` is in the `regex`
    /// crate's syntax (`${1}`, `${name}`, `$$`), which both engines expand alike.
    pub(crate) fn replacen(
        &self,
        text: &str,
        count: usize,
        replacement: &str,
    ) -> Result<String, PyRegexError> {
        self.substitute(text, count, replacement)
            .map(|(out, _)| out)
    }

    /// Python's `re.sub` walk: after an empty match the next one may not be empty at the
    /// same place, but after a non-empty one it may (`re.sub('x*', '-', 'ax')` is
    /// `-a--`), which the `regex` crate's own iteration never allows.
    fn substitute(
        &self,
        text: &str,
        count: usize,
        replacement: &str,
    ) -> Result<(String, usize), PyRegexError> {
        let mut out = String::with_capacity(text.len());
        let (mut copied, mut pos, mut n) = (0, 0, 0);
        let mut must_advance = false;
        while pos <= text.len() && (count == 0 || n < count) {
            let mut expanded = String::new();
            let found = match &self.engine {
                Engine::Linear(re) => re.captures_at(text, pos).map(|caps| {
                    caps.expand(replacement, &mut expanded);
                    let m = caps.get(0).expect("group 0 is the match");
                    (m.start(), m.end())
                }),
                Engine::Backtracking(re) => {
                    re.captures_from_pos(text, pos)
                        .map_err(runtime)?
                        .map(|caps| {
                            caps.expand(replacement, &mut expanded);
                            let m = caps.get(0).expect("group 0 is the match");
                            (m.start(), m.end())
                        })
                }
            };
            let Some((start, end)) = found else {
                break;
            };
            if must_advance && start == end && start == pos {
                match text[pos..].chars().next() {
                    Some(c) => {
                        pos += c.len_utf8();
                        must_advance = false;
                        continue;
                    }
                    None => break,
                }
            }
            out.push_str(&text[copied..start]);
            out.push_str(&expanded);
            copied = end;
            n += 1;
            must_advance = start == end;
            pos = end;
        }
        out.push_str(&text[copied..]);
        Ok((out, n))
    }

    /// Where the first match and each of its groups lie (byte offsets; `None` for a group
    /// that did not take part), as Python's `match.span(i)`.
    pub(crate) fn spans(&self, text: &str) -> Result<Option<Spans>, PyRegexError> {
        let n = self.group_count() + 1;
        match &self.engine {
            Engine::Linear(re) => Ok(re.captures(text).map(|caps| {
                (0..n)
                    .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            })),
            Engine::Backtracking(re) => Ok(re.captures(text).map_err(runtime)?.map(|caps| {
                (0..n)
                    .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
                    .collect()
            })),
        }
    }

    /// Every match replaced, and how many there were, as Python's `re.subn`;
    /// `replacement` in the `regex` crate's syntax (see [`python_replacement`]).
    pub(crate) fn subn(
        &self,
        text: &str,
        replacement: &str,
    ) -> Result<(String, usize), PyRegexError> {
        self.substitute(text, 0, replacement)
    }
}

/// Python's replacement syntax (`\1`, `\g<1>`, `\g<name>`) in the `regex` crate's
/// (`${1}`, `${name}`); a literal `$` is doubled.
pub(crate) fn python_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len() + 8);
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d) if d.is_ascii_digit() => {
                    let mut group = String::new();
                    while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                        group.push(d);
                        chars.next();
                        if group.len() == 2 {
                            break;
                        }
                    }
                    out.push_str(&format!("${{{group}}}"));
                }
                Some('g') => {
                    chars.next();
                    if chars.peek() == Some(&'<') {
                        chars.next();
                        let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
                        out.push_str(&format!("${{{name}}}"));
                    } else {
                        out.push_str("\\g");
                    }
                }
                Some('n') => {
                    chars.next();
                    out.push('\n');
                }
                Some('t') => {
                    chars.next();
                    out.push('\t');
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

fn runtime(e: fancy_regex::Error) -> PyRegexError {
    PyRegexError(format!(
        "the regular expression could not be matched: {e} (a pattern with look-around or \
         back-references backtracks; simplify it)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(pattern: &str) -> PyRegex {
        PyRegex::new(pattern, Anchor::Search, false, false).unwrap()
    }

    #[test]
    fn plain_patterns_stay_on_the_linear_engine() {
        assert!(matches!(re(r"a+b").engine, Engine::Linear(_)));
        assert!(matches!(re(r"(?P<k>\w+)=").engine, Engine::Linear(_)));
        assert!(matches!(re(r"(?<==)b").engine, Engine::Backtracking(_)));
        assert!(matches!(re(r"(x)\1").engine, Engine::Backtracking(_)));
    }

    /// Outcomes ansible-playbook 2.21 (Python's `re`) gave for these patterns.
    #[test]
    fn look_around_and_back_references_match_as_python() {
        assert_eq!(
            re(r"(?<==)bar").replacen("foo=bar", 0, "baz").unwrap(),
            "foo=baz"
        );
        assert_eq!(re(r"(?<=a)").replacen("ab", 0, "-").unwrap(), "a-b");
        let found = re(r"(\w+)\1").captures("abcabc x").unwrap().unwrap();
        assert_eq!(found[0].as_deref(), Some("abcabc"));
        let all = re(r"\d+(?=USD)")
            .captures_all("price 100USD 7EUR", usize::MAX)
            .unwrap();
        assert_eq!(all, [vec![Some("100".to_string())]]);
        assert!(!re(r"x(?!y)").is_match("xy").unwrap());
        let named = re(r"(?P<k>\w+): (?P=k)");
        assert_eq!(named.group_index("k"), Some(1));
        let found = named.captures("key: key").unwrap().unwrap();
        assert_eq!(found[0].as_deref(), Some("key: key"));
        assert_eq!(found[1].as_deref(), Some("key"));
        let start = PyRegex::new(r"(x)\1", Anchor::Start, false, false).unwrap();
        assert!(start.is_match("xxy").unwrap());
        assert!(!start.is_match("yxx").unwrap());
        let full = PyRegex::new(r"(x)\1", Anchor::Full, true, false).unwrap();
        assert!(full.is_match("XX").unwrap() && !full.is_match("XXy").unwrap());
    }

    /// `re.sub`/`re.subn` outcomes from Python 3.12.
    #[test]
    fn substitutions_walk_empty_matches_as_python() {
        assert_eq!(re("x*").replacen("abxd", 0, "-").unwrap(), "-a-b--d-");
        assert_eq!(
            re("x*").subn("x=1\nx=3", "-").unwrap(),
            ("--=-1-\n--=-3-".to_string(), 8)
        );
        assert_eq!(
            re("a|b").subn("cab", "[${0}]").unwrap(),
            ("c[a][b]".into(), 2)
        );
        assert_eq!(re("").replacen("ab", 0, "-").unwrap(), "-a-b-");
        assert_eq!(re("a").replacen("aaa", 2, "b").unwrap(), "bba");
        assert_eq!(
            re(r"(?<=a)b").subn("abab", "c").unwrap(),
            ("acac".into(), 2)
        );
        let multi = PyRegex::new("^", Anchor::Search, false, true).unwrap();
        assert_eq!(multi.replacen("x\ny\n", 0, "# ").unwrap(), "# x\n# y\n# ");
    }

    #[test]
    fn broken_patterns_name_the_pattern_and_the_fault() {
        let err = |p: &str| PyRegex::new(p, Anchor::Search, false, false).err().unwrap();
        assert!(
            err("a(b")
                .to_string()
                .starts_with("invalid regular expression \"a(b\": ")
        );
        let both = err(r"(?<=a)(b").to_string();
        assert!(
            both.starts_with("invalid regular expression \"(?<=a)(b\": "),
            "{both}"
        );
        assert_eq!(
            err("*").to_string(),
            "invalid regular expression \"*\": nothing to repeat at position 0"
        );
        let anchored = PyRegex::new("ab|+", Anchor::Full, false, false)
            .err()
            .unwrap();
        assert!(
            anchored
                .to_string()
                .ends_with("nothing to repeat at position 3"),
            "{anchored}"
        );
    }
}
