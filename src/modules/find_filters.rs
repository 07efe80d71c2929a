//! The filters of Ansible's `find`, each as the module defines it: `age` and `size` with
//! their units, name patterns (fnmatch or Python `re.match`) with excludes, and `mode`.

use crate::template::pyregex::{Anchor, PyRegex};

/// `age`: `-?\d+` with an optional unit `s|m|h|d|w`, in seconds; `None` when malformed.
pub(super) fn parse_age(text: &str) -> Option<i64> {
    parse_with_units(
        text,
        &[
            ('s', 1),
            ('m', 60),
            ('h', 3600),
            ('d', 86400),
            ('w', 604800),
        ],
    )
}

/// `size`: `-?\d+` with an optional unit `b|k|m|g|t` (powers of 1024), in bytes.
pub(super) fn parse_size(text: &str) -> Option<i64> {
    parse_with_units(
        text,
        &[
            ('b', 1),
            ('k', 1 << 10),
            ('m', 1 << 20),
            ('g', 1 << 30),
            ('t', 1 << 40),
        ],
    )
}

fn parse_with_units(text: &str, units: &[(char, i64)]) -> Option<i64> {
    let text = text.to_lowercase();
    let (number, factor) = match text.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => {
            let factor = units.iter().find(|(u, _)| *u == c)?.1;
            (&text[..text.len() - 1], factor)
        }
        _ => (text.as_str(), 1),
    };
    let digits = number.strip_prefix('-').unwrap_or(number);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse::<i64>().ok()?.checked_mul(factor)
}

/// `agefilter`: a positive age keeps what is at least that old, a negative one what is at
/// most that old.
pub(super) fn age_matches(now: f64, stamp: f64, age: Option<i64>) -> bool {
    match age {
        None => true,
        Some(age) if age >= 0 => now - stamp >= age as f64,
        Some(age) => now - stamp <= age.unsigned_abs() as f64,
    }
}

/// `sizefilter`: a positive size keeps files at least that big, a negative one at most.
pub(super) fn size_matches(size: u64, wanted: Option<i64>) -> bool {
    match wanted {
        None => true,
        Some(w) if w >= 0 => size >= w as u64,
        Some(w) => size <= w.unsigned_abs(),
    }
}

/// The name patterns: fnmatch's, or Python regular expressions matched at the start of
/// the name (`re.match`).
pub(super) enum Names {
    Globs {
        patterns: Vec<String>,
        excludes: Vec<String>,
    },
    Regexes {
        patterns: Vec<PyRegex>,
        excludes: Vec<PyRegex>,
    },
}

impl Names {
    pub fn new(patterns: Vec<String>, excludes: Vec<String>, regex: bool) -> Result<Names, String> {
        if !regex {
            return Ok(Names::Globs { patterns, excludes });
        }
        let compile = |list: Vec<String>| -> Result<Vec<PyRegex>, String> {
            list.iter()
                .map(|p| PyRegex::new(p, Anchor::Start, false, false).map_err(|e| e.to_string()))
                .collect()
        };
        Ok(Names::Regexes {
            patterns: compile(patterns)?,
            excludes: compile(excludes)?,
        })
    }

    /// `pfilter`: a name matching a pattern and no exclude. Excludes are only looked at
    /// with patterns (the module always has some: `*` or `.*` by default).
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Names::Globs { patterns, excludes } => {
                patterns.iter().any(|p| crate::fnmatch::fnmatch(p, name))
                    && !excludes.iter().any(|e| crate::fnmatch::fnmatch(e, name))
            }
            Names::Regexes { patterns, excludes } => {
                let hit = |r: &PyRegex| r.is_match(name).unwrap_or(false);
                patterns.iter().any(hit) && !excludes.iter().any(hit)
            }
        }
    }
}

/// `mode` as octal text; symbolic modes are refused by the caller.
pub(super) fn parse_octal_mode(text: &str) -> Option<u32> {
    u32::from_str_radix(text, 8).ok().map(|m| m & 0o7777)
}

/// `mode_filter`: the exact permission bits, or any of them.
pub(super) fn mode_matches(st_mode: u32, wanted: Option<u32>, exact: bool) -> bool {
    match wanted {
        None => true,
        Some(m) if exact => st_mode & 0o7777 == m,
        Some(m) => st_mode & m != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_sizes_with_units() {
        assert_eq!(parse_age("30"), Some(30));
        assert_eq!(parse_age("2m"), Some(120));
        assert_eq!(parse_age("-1D"), Some(-86400));
        assert_eq!(parse_age("1w"), Some(604800));
        assert_eq!(parse_age("3x"), None);
        assert_eq!(parse_age("1.5h"), None);
        assert_eq!(parse_age(""), None);
        assert_eq!(parse_size("10k"), Some(10240));
        assert_eq!(parse_size("-10"), Some(-10));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("k"), None);
    }

    #[test]
    fn filters_keep_what_ansible_keeps() {
        assert!(age_matches(1000.0, 100.0, Some(900)));
        assert!(!age_matches(1000.0, 101.0, Some(900)));
        assert!(age_matches(1000.0, 500.0, Some(-600)));
        assert!(!age_matches(1000.0, 300.0, Some(-600)));
        assert!(size_matches(10, Some(10)) && !size_matches(9, Some(10)));
        assert!(size_matches(10, Some(-10)) && !size_matches(11, Some(-10)));
        assert!(mode_matches(0o100644, parse_octal_mode("0644"), true));
        assert!(!mode_matches(0o100640, parse_octal_mode("644"), true));
        assert!(!mode_matches(0o100640, parse_octal_mode("004"), false));
        assert!(mode_matches(0o100644, parse_octal_mode("004"), false));
    }

    #[test]
    fn names_by_glob_or_regex_with_excludes() {
        let globs = Names::new(vec!["*.log".into()], vec!["d*".into()], false).unwrap();
        assert!(globs.matches("a.log") && !globs.matches("d.log") && !globs.matches("b.txt"));
        let res = Names::new(vec![r"[ab]\..*".into()], vec![], true).unwrap();
        assert!(res.matches("a.log") && !res.matches("xa.log"));
        assert!(Names::new(vec!["(".into()], vec![], true).is_err());
    }
}
