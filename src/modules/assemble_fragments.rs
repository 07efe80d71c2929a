//! How assemble joins a directory's fragments into one file, as Ansible's
//! `assemble_from_fragments` does: names in sorted order, a `regexp` searched in each name,
//! hidden names skipped on request, a newline added after a fragment that lacks one, and
//! the delimiter (with its backslash escapes decoded) between fragments.

use crate::template::pyregex::{Anchor, PyRegex};

/// Which fragments take part, from the task's arguments.
pub(super) struct Selection {
    regexp: Option<PyRegex>,
    ignore_hidden: bool,
}

impl Selection {
    /// `Err` is Ansible's message for a pattern Python's `re` refuses.
    pub fn new(regexp: Option<&str>, ignore_hidden: bool) -> Result<Selection, String> {
        let regexp = match regexp {
            None => None,
            Some(pattern) => Some(
                PyRegex::new(pattern, Anchor::Search, false, false)
                    .map_err(|e| format!("Invalid Regexp ({e}) in \"{pattern}\""))?,
            ),
        };
        Ok(Selection {
            regexp,
            ignore_hidden,
        })
    }

    /// Whether the regular file called `name` is a fragment.
    pub fn takes(&self, name: &str) -> bool {
        if self.ignore_hidden && name.starts_with('.') {
            return false;
        }
        match &self.regexp {
            None => true,
            Some(re) => re.is_match(name).unwrap_or(false),
        }
    }
}

/// The fragments (already in Python's `sorted` order of their names) as one file.
pub(super) fn join(fragments: &[Vec<u8>], delimiter: Option<&str>) -> Vec<u8> {
    let delimiter = delimiter.filter(|d| !d.is_empty()).map(escape_decode);
    let mut out = Vec::new();
    let mut add_newline = false;
    for (i, fragment) in fragments.iter().enumerate() {
        if add_newline {
            out.push(b'\n');
        }
        if i > 0
            && let Some(delimiter) = &delimiter
        {
            out.extend_from_slice(delimiter);
            if delimiter.last() != Some(&b'\n') {
                out.push(b'\n');
            }
        }
        out.extend_from_slice(fragment);
        add_newline = !fragment.ends_with(b"\n");
    }
    out
}

/// Python's `codecs.escape_decode`: the backslash escapes of a bytes literal (`\n`, `\t`,
/// `\\`, `\xNN`, octal `\NNN`...); an unknown escape stays as written.
pub(super) fn escape_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'\n' => {}
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                let mut taken = 0;
                while taken < 2 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                    value = value * 8 + u32::from(bytes[i] - b'0');
                    i += 1;
                    taken += 1;
                }
                out.push((value & 0xff) as u8);
            }
            b'x' if i + 2 <= bytes.len()
                && bytes[i].is_ascii_hexdigit()
                && bytes[i + 1].is_ascii_hexdigit() =>
            {
                let hex = std::str::from_utf8(&bytes[i..i + 2]).expect("ascii");
                out.push(u8::from_str_radix(hex, 16).expect("hex digits"));
                i += 2;
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frags(parts: &[&str]) -> Vec<Vec<u8>> {
        parts.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    #[test]
    fn joins_with_newlines_and_delimiters_as_ansible() {
        assert_eq!(join(&frags(&["a\n", "b"]), None), b"a\nb");
        assert_eq!(join(&frags(&["a", "b"]), None), b"a\nb");
        assert_eq!(join(&frags(&["a\n", "b\n"]), Some("#--")), b"a\n#--\nb\n");
        assert_eq!(join(&frags(&["a", "b"]), Some("--\\n")), b"a\n--\nb");
        assert_eq!(join(&frags(&["a"]), Some("--")), b"a");
        assert_eq!(join(&frags(&[]), Some("--")), b"");
    }

    #[test]
    fn decodes_escapes_as_python() {
        assert_eq!(escape_decode(r"a\tb\\c"), b"a\tb\\c");
        assert_eq!(escape_decode(r"\x41\101\q"), b"AA\\q");
        assert_eq!(escape_decode("end\\"), b"end\\");
    }

    #[test]
    fn selects_by_search_and_hidden() {
        let s = Selection::new(Some("^0[0-9]"), true).unwrap();
        assert!(s.takes("01-a"));
        assert!(!s.takes("a01"));
        assert!(!Selection::new(None, true).unwrap().takes(".x"));
        assert!(Selection::new(None, false).unwrap().takes(".x"));
        assert!(!s.takes("x01"));
        let err = Selection::new(Some("("), false).err().unwrap();
        assert!(err.starts_with("Invalid Regexp ("), "{err}");
        assert!(err.ends_with(" in \"(\""), "{err}");
    }
}
