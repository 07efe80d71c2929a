//! Ansible's `key=value` argument strings (`copy: src=a dest="b c"`) and the free-form
//! command lines of command/shell, which may carry `chdir=`-style options (Ansible's
//! parsing/splitter.py). At the bottom of the dependency graph: it uses nothing from the
//! crate, so templates, modules and the loader all read `k=v` the same way.

use std::ops::Range;

/// Options that command/shell take out of a free-form line; any other `k=v` is part of
/// the command (`echo a=b` prints `a=b`).
pub const FREE_FORM_OPTIONS: &[&str] = &[
    "creates",
    "removes",
    "chdir",
    "executable",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

#[derive(Debug, Default, PartialEq)]
pub struct KvArgs {
    pub pairs: Vec<(String, String)>,
    /// Every token that is not an option, with the original spacing between them.
    pub raw: String,
}

/// Splits on whitespace outside quotes and outside `{{ }}`/`{% %}`/`{# #}`, returning each
/// token's byte range (quotes kept, as Ansible's split_args does).
pub fn split_args(s: &str) -> Vec<Range<usize>> {
    let bytes = s.as_bytes();
    let mut tokens = Vec::new();
    let mut start: Option<usize> = None;
    let mut quote: Option<u8> = None;
    let mut jinja_depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        if quote.is_none() && jinja_depth == 0 && b.is_ascii_whitespace() {
            if let Some(st) = start.take() {
                tokens.push(st..i);
            }
            i += 1;
            continue;
        }
        if start.is_none() {
            start = Some(i);
        }
        match (b, next) {
            (b'\\', Some(_)) => {
                i += 2;
                continue;
            }
            (b'{', Some(b'{' | b'%' | b'#')) => {
                jinja_depth += 1;
                i += 2;
                continue;
            }
            (b'}' | b'%' | b'#', Some(b'}')) if jinja_depth > 0 => {
                jinja_depth -= 1;
                i += 2;
                continue;
            }
            (b'"' | b'\'', _) if jinja_depth == 0 => match quote {
                None => quote = Some(b),
                Some(q) if q == b => quote = None,
                Some(_) => {}
            },
            _ => {}
        }
        i += 1;
    }
    if let Some(st) = start {
        tokens.push(st..bytes.len());
    }
    tokens
}

/// Parses `k=v k2="quoted v"`. With `only`, just those keys are options and every other
/// token stays in `raw` (free-form modules); without it, every `k=v` is an option.
pub fn parse_kv(s: &str, only: Option<&[&str]>) -> KvArgs {
    let mut out = KvArgs::default();
    let mut prev_end: Option<usize> = None;
    for range in split_args(s) {
        let token = &s[range.clone()];
        let option = split_key_value(token).filter(|(k, _)| match only {
            Some(names) => names.contains(k),
            None => true,
        });
        match option {
            Some((k, v)) => out
                .pairs
                .push((k.to_string(), decode_escapes(&unquote(v.trim())))),
            None => {
                if let Some(end) = prev_end {
                    out.raw.push_str(&s[end..range.start]);
                }
                out.raw.push_str(token);
                prev_end = Some(range.end);
            }
        }
    }
    out
}

/// `key=value` at the first `=` (after the first character) not escaped by a backslash,
/// as Ansible's parse_kv splits a token: the key may be anything, a template included
/// (`set_fact: "{{ name }}=x"`), and an `=` inside `{{ }}` splits too (`{{ "k=v" }}` is
/// the key `{{ "k`, as Ansible has it).
fn split_key_value(token: &str) -> Option<(&str, &str)> {
    let bytes = token.as_bytes();
    (1..bytes.len())
        .find(|&i| bytes[i] == b'=' && bytes[i - 1] != b'\\')
        .map(|i| (&token[..i], &token[i + 1..]))
}

/// Strips one pair of matching outer quotes.
pub fn unquote(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Python string escapes in `k=v` values (`content="a\nb"` writes a newline), as Ansible's
/// parse_kv decodes them.
fn decode_escapes(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.peek() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'a' => Some('\u{07}'),
            'b' => Some('\u{08}'),
            'f' => Some('\u{0c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{0b}'),
            _ => None,
        };
        if let Some(decoded) = simple {
            chars.next();
            out.push(decoded);
            continue;
        }
        let width = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if width > 0 {
            let hex: String = chars.clone().skip(1).take(width).collect();
            if hex.len() == width
                && let Some(decoded) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
            {
                for _ in 0..=width {
                    chars.next();
                }
                out.push(decoded);
                continue;
            }
        }
        out.push('\\');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &str) -> Vec<(String, String)> {
        parse_kv(s, None).pairs
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn splits_respecting_quotes_and_jinja() {
        let s = r#"a=1 b="x y" c='{{ p }} q' msg={{ a + b }} d"#;
        let tokens: Vec<_> = split_args(s).into_iter().map(|r| &s[r]).collect();
        assert_eq!(
            tokens,
            ["a=1", r#"b="x y""#, "c='{{ p }} q'", "msg={{ a + b }}", "d"]
        );
    }

    #[test]
    fn parses_key_values() {
        assert_eq!(
            pairs(r#"src=a.txt dest="/tmp/b c" mode=0644"#),
            [
                kv("src", "a.txt"),
                kv("dest", "/tmp/b c"),
                kv("mode", "0644")
            ]
        );
        assert_eq!(
            pairs(r#"content="line1\nline2\t\u00e9" x='it''s'"#),
            [kv("content", "line1\nline2\té"), kv("x", "it''s")]
        );
        assert_eq!(pairs("msg={{ a }}={{ b }}"), [kv("msg", "{{ a }}={{ b }}")]);
        // Ansible's own, odd as it is: the first `=` splits, inside `{{ }}` too.
        assert_eq!(pairs(r#"{{ "k=v" }}"#), [kv(r#"{{ "k"#, r#"v" }}"#)]);
        let bare = parse_kv("dest=/x stray", None);
        assert_eq!(bare.raw, "stray");
    }

    #[test]
    fn free_form_keeps_the_command_and_takes_known_options() {
        let a = parse_kv(
            r#"echo "a  b" foo=bar chdir=/tmp creates="/x y""#,
            Some(FREE_FORM_OPTIONS),
        );
        assert_eq!(a.raw, r#"echo "a  b" foo=bar"#);
        assert_eq!(a.pairs, [kv("chdir", "/tmp"), kv("creates", "/x y")]);
        let script = "set -e\necho a\necho b | wc -l\n";
        let a = parse_kv(script, Some(FREE_FORM_OPTIONS));
        assert_eq!(a.raw, "set -e\necho a\necho b | wc -l");
        assert!(a.pairs.is_empty());
        let a = parse_kv("creates=/x touch /x", Some(FREE_FORM_OPTIONS));
        assert_eq!(a.raw, "touch /x");
        let a = parse_kv(r"echo a\=b", Some(FREE_FORM_OPTIONS));
        assert_eq!(a.raw, r"echo a\=b");
    }
}
