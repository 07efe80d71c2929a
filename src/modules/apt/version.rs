//! Debian version ordering (deb-version(7)) as dpkg's `verrevcmp` defines it: the epoch as
//! a number, then the upstream version and the revision, each compared in runs of
//! non-digits (letters before other characters, `~` before everything, even the end) and
//! runs of digits (as numbers). apt's `version_compare`, which Ansible's apt uses, is the
//! same order.

use std::cmp::Ordering;

pub fn compare(a: &str, b: &str) -> Ordering {
    let (epoch_a, upstream_a, revision_a) = split(a);
    let (epoch_b, upstream_b, revision_b) = split(b);
    epoch_a
        .cmp(&epoch_b)
        .then_with(|| compare_part(upstream_a, upstream_b))
        .then_with(|| compare_part(revision_a, revision_b))
}

/// `[epoch:]upstream[-revision]`; the revision is after the last hyphen.
fn split(version: &str) -> (u64, &str, &str) {
    let version = version.trim();
    let (epoch, rest) = match version.split_once(':') {
        Some((e, rest)) if !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) => {
            (e.parse().unwrap_or(u64::MAX), rest)
        }
        _ => (0, version),
    };
    match rest.rsplit_once('-') {
        Some((upstream, revision)) => (epoch, upstream, revision),
        None => (epoch, rest, ""),
    }
}

/// A character's weight in a non-digit run; the end of the string weighs 0.
fn weight(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(b'~') => -1,
        Some(c) => i32::from(c) + 256,
    }
}

fn compare_part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let at = |s: &[u8], k: usize| s.get(k).copied();
    let digit = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_digit());
    while i < a.len() || j < b.len() {
        while (at(a, i).is_some() && !digit(at(a, i))) || (at(b, j).is_some() && !digit(at(b, j))) {
            let (wa, wb) = (weight(at(a, i)), weight(at(b, j)));
            if wa != wb {
                return wa.cmp(&wb);
            }
            i += 1;
            j += 1;
        }
        while at(a, i) == Some(b'0') {
            i += 1;
        }
        while at(b, j) == Some(b'0') {
            j += 1;
        }
        let mut first_difference = Ordering::Equal;
        while digit(at(a, i)) && digit(at(b, j)) {
            if first_difference == Ordering::Equal {
                first_difference = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if digit(at(a, i)) {
            return Ordering::Greater;
        }
        if digit(at(b, j)) {
            return Ordering::Less;
        }
        if first_difference != Ordering::Equal {
            return first_difference;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    #[test]
    fn orders_as_dpkg() {
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0", "1.1", Less),
            ("1.10", "1.9", Greater),
            ("1.0~rc1", "1.0", Less),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0", "1.0-1", Less),
            ("1.0-1", "1.0-2", Less),
            ("1:0.1", "2.0", Greater),
            ("0:2.0", "2.0", Equal),
            ("1.0a", "1.0", Greater),
            ("1.0a", "1.0+", Less),
            ("1.001", "1.1", Equal),
            ("2.3.4-1+deb12u1", "2.3.4-1", Greater),
            ("1.6-2", "1.6-2+b1", Less),
            ("9.18.28-1~deb12u2", "9.18.28-1", Less),
        ] {
            assert_eq!(compare(a, b), want, "{a} vs {b}");
            assert_eq!(compare(b, a), want.reverse(), "{b} vs {a}");
        }
    }
}
