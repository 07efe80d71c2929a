//! Ansible's sequence lookup (`with_sequence`, `lookup('sequence', ...)`): its key=value
//! and short forms, Python's integer literals and `%` formatting of one integer.

use crate::kv_args::parse_kv;

#[derive(Debug, Default)]
struct Sequence {
    start: i64,
    end: Option<i64>,
    count: Option<i64>,
    stride: i64,
    format: String,
}

/// `with_sequence` after templating, as Ansible's sequence lookup: `start= end= stride=
/// format= count=` or the short `[start-]end[/stride][:format]`, to the formatted items.
/// Most items one sequence makes: each is a loop item (or a list element) held in memory
/// at once, and a typo in `end` should be an error, not the controller's memory gone.
pub const MAX_ITEMS: usize = 1_000_000;

pub fn sequence_items(spec: &str) -> Result<Vec<String>, String> {
    let spec = spec.trim();
    let mut seq = Sequence {
        start: 1,
        stride: 1,
        format: "%d".into(),
        ..Sequence::default()
    };
    if spec.contains('=') {
        let parsed = parse_kv(spec, None);
        if !parsed.raw.is_empty() {
            return Err(format!(
                "unrecognized arguments to with_sequence: ['{}']",
                parsed.raw
            ));
        }
        for (k, v) in parsed.pairs {
            let int = |v: &str| {
                parse_python_int(v).ok_or_else(|| {
                    format!(
                        "Config '{k}' for 'sequence' lookup plugin from 'Direct' has an invalid value: Invalid value provided for 'integer': '{v}'"
                    )
                })
            };
            match k.as_str() {
                "start" => seq.start = int(&v)?,
                "end" => seq.end = Some(int(&v)?),
                "count" => seq.count = Some(int(&v)?),
                "stride" => seq.stride = int(&v)?,
                "format" => seq.format = v,
                _ => return Err(format!("unrecognized arguments to with_sequence: ['{k}']")),
            }
        }
    } else {
        parse_short_sequence(spec, &mut seq)
            .ok_or_else(|| format!("unknown sequence format: {spec}"))??;
    }
    match (seq.count, seq.end) {
        (None, None) => return Err("must specify count or end in with_sequence".into()),
        (Some(_), Some(_)) => {
            return Err("can't specify both count and end in with_sequence".into());
        }
        (Some(0), None) => return Ok(Vec::new()),
        (Some(count), None) => {
            let end = count
                .checked_mul(seq.stride)
                .and_then(|span| seq.start.checked_add(span))
                .and_then(|end| end.checked_sub(1));
            seq.end = Some(end.ok_or_else(|| {
                format!(
                    "with_sequence: {count} items from {} by {} go past a 64-bit integer",
                    seq.start, seq.stride
                )
            })?);
        }
        (None, Some(_)) => {}
    }
    let end = seq.end.unwrap_or(seq.start);
    if seq.stride > 0 && end < seq.start {
        return Err("to count backwards make stride negative".into());
    }
    if seq.stride < 0 && end > seq.start {
        return Err("to count forward don't make stride negative".into());
    }
    if seq.format.matches('%').count() != 1 {
        return Err(format!("bad formatting string: {}", seq.format));
    }
    if seq.stride == 0 {
        return Ok(Vec::new());
    }
    // Computed wide: `end - start` of two 64-bit integers may not fit in one.
    let len = (i128::from(end) - i128::from(seq.start)) / i128::from(seq.stride) + 1;
    if len > MAX_ITEMS as i128 {
        return Err(format!(
            "with_sequence of {len} items is more than the {MAX_ITEMS} turbo-play makes"
        ));
    }
    let mut items = Vec::with_capacity(len as usize);
    let mut i = seq.start;
    while (seq.stride > 0 && i <= end) || (seq.stride < 0 && i >= end) {
        items.push(
            printf_int(&seq.format, i)
                .ok_or_else(|| format!("problem formatting {i} with {}", seq.format))?,
        );
        // The last item may sit at the very end of the integers.
        let Some(next) = i.checked_add(seq.stride) else {
            break;
        };
        i = next;
    }
    Ok(items)
}

/// `[start-]end[/stride][:format]`, numbers in decimal, `0x` hex or `0` octal. `None`
/// when the text has not that shape (Ansible's `0?x?[0-9a-f]+` numbers); a shaped number
/// that is no integer (`A-4`) is Ansible's invalid-value error.
fn parse_short_sequence(spec: &str, seq: &mut Sequence) -> Option<Result<(), String>> {
    let (numbers, format) = match spec.split_once(':') {
        Some((n, f)) if !f.is_empty() => (n, Some(f)),
        Some(_) => return None,
        None => (spec, None),
    };
    let (range, stride) = match numbers.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (numbers, None),
    };
    let (start, end) = match range.split_once('-') {
        Some((s, e)) => (Some(s), e),
        None => (None, range),
    };
    static NUM: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new("(?i)^0?x?[0-9a-f]+$").expect("a valid pattern")
    });
    let shaped = |s: &str| NUM.is_match(s);
    if !start.into_iter().chain([end]).chain(stride).all(shaped) {
        return None;
    }
    let number = |field: &str, s: &str| -> Result<i64, String> {
        let lower = s.to_ascii_lowercase();
        let parsed = if let Some(hex) = lower.strip_prefix("0x") {
            i64::from_str_radix(hex, 16).ok()
        } else if lower.len() > 1 && lower.starts_with('0') {
            i64::from_str_radix(&lower[1..], 8).ok()
        } else if lower.bytes().all(|b| b.is_ascii_digit()) {
            lower.parse().ok()
        } else {
            None
        };
        parsed.ok_or_else(|| {
            format!(
                "Config '{field}' for 'sequence' lookup plugin from 'Direct' has an invalid value: Invalid value provided for 'integer': '{s}'"
            )
        })
    };
    let mut fill = || -> Result<(), String> {
        if let Some(s) = start {
            seq.start = number("start", s)?;
        }
        seq.end = Some(number("end", end)?);
        if let Some(s) = stride {
            seq.stride = number("stride", s)?;
        }
        if let Some(f) = format {
            seq.format = f.to_string();
        }
        Ok(())
    };
    Some(fill())
}

/// Python's `int(text, 0)`: optional sign, `0x`/`0o`/`0b` prefixes, no leading zeros.
fn parse_python_int(text: &str) -> Option<i64> {
    let t = text.trim().replace('_', "");
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let lower = digits.to_ascii_lowercase();
    let value = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()?
    } else if let Some(b) = lower.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if lower.is_empty()
        || !lower.bytes().all(|b| b.is_ascii_digit())
        || (lower.len() > 1 && lower.starts_with('0') && lower.bytes().any(|b| b != b'0'))
    {
        return None;
    } else {
        lower.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// Python's `format % n` for one integer conversion: flags `-0+ #`, width, precision and
/// `d i u s r x X o` (plus `f F e E g G` as floats), with literal text around it.
fn printf_int(format: &str, n: i64) -> Option<String> {
    let pos = format.find('%')?;
    let (prefix, spec) = (&format[..pos], &format[pos + 1..]);
    let mut chars = spec.char_indices().peekable();
    let (mut left, mut zero, mut plus, mut space, mut alt) = (false, false, false, false, false);
    while let Some(&(_, c)) = chars.peek() {
        match c {
            '-' => left = true,
            '0' => zero = true,
            '+' => plus = true,
            ' ' => space = true,
            '#' => alt = true,
            _ => break,
        }
        chars.next();
    }
    let mut width = 0usize;
    while let Some(&(_, c)) = chars.peek().filter(|(_, c)| c.is_ascii_digit()) {
        width = widen(width, c)?;
        chars.next();
    }
    let mut precision: Option<usize> = None;
    if chars.peek().map(|&(_, c)| c) == Some('.') {
        chars.next();
        let mut p = 0usize;
        while let Some(&(_, c)) = chars.peek().filter(|(_, c)| c.is_ascii_digit()) {
            p = widen(p, c)?;
            chars.next();
        }
        precision = Some(p);
    }
    let (i, conv) = chars.next()?;
    let suffix = &spec[i + conv.len_utf8()..];
    let sign = if n < 0 {
        "-"
    } else if plus {
        "+"
    } else if space {
        " "
    } else {
        ""
    };
    let magnitude = n.unsigned_abs();
    let (digits, radix_prefix) = match conv {
        'd' | 'i' | 'u' => (magnitude.to_string(), ""),
        's' | 'r' => {
            let text = n.to_string();
            let text = match precision {
                Some(p) => text.chars().take(p).collect(),
                None => text,
            };
            return Some(format!("{prefix}{}{suffix}", pad(&text, width, left, ' ')));
        }
        'x' => (format!("{magnitude:x}"), if alt { "0x" } else { "" }),
        'X' => (format!("{magnitude:X}"), if alt { "0X" } else { "" }),
        'o' => (format!("{magnitude:o}"), if alt { "0o" } else { "" }),
        'f' | 'F' => (
            format!("{:.*}", precision.unwrap_or(6), magnitude as f64),
            "",
        ),
        'e' | 'E' | 'g' | 'G' => return None,
        _ => return None,
    };
    let digits = match (precision, conv) {
        (Some(p), 'd' | 'i' | 'u' | 'x' | 'X' | 'o') if digits.len() < p => {
            format!("{}{digits}", "0".repeat(p - digits.len()))
        }
        _ => digits,
    };
    let body = if zero && !left {
        let lead = sign.len() + radix_prefix.len();
        let fill = width.saturating_sub(lead + digits.len());
        format!("{sign}{radix_prefix}{}{digits}", "0".repeat(fill))
    } else {
        pad(&format!("{sign}{radix_prefix}{digits}"), width, left, ' ')
    };
    Some(format!("{prefix}{body}{suffix}"))
}

/// Widest field (and longest precision) a format may ask for: Python refuses a width past
/// its int range; a few thousand columns is already no host name.
const MAX_FIELD: usize = 4096;

/// `value` with the decimal digit `c` appended, `None` past [`MAX_FIELD`].
fn widen(value: usize, c: char) -> Option<usize> {
    let next = value * 10 + c.to_digit(10)? as usize;
    (next <= MAX_FIELD).then_some(next)
}

fn pad(text: &str, width: usize, left: bool, fill: char) -> String {
    let len = text.chars().count();
    if len >= width {
        return text.to_string();
    }
    let padding: String = std::iter::repeat_n(fill, width - len).collect();
    if left {
        format!("{text}{padding}")
    } else {
        format!("{padding}{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(spec: &str) -> Vec<String> {
        sequence_items(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    #[test]
    fn key_value_sequences() {
        assert_eq!(seq("start=1 end=3"), ["1", "2", "3"]);
        assert_eq!(seq("end=3"), ["1", "2", "3"]);
        assert_eq!(seq("start=0 end=10 stride=5"), ["0", "5", "10"]);
        assert_eq!(seq("start=5 end=1 stride=-2"), ["5", "3", "1"]);
        assert_eq!(seq("start=1 count=3 stride=2"), ["1", "3", "5"]);
        assert_eq!(seq("count=0"), Vec::<String>::new());
        assert_eq!(
            seq("start=1 end=3 format=testuser%02x"),
            ["testuser01", "testuser02", "testuser03"]
        );
        assert_eq!(seq("start=0x0a end=0x0c format=%x"), ["a", "b", "c"]);
        assert_eq!(seq("start=8 end=10 format=%o"), ["10", "11", "12"]);
        assert_eq!(seq("start=1 end=2 format='/srv/%s'"), ["/srv/1", "/srv/2"]);
        assert_eq!(seq("start=1 end=1000").len(), 1000);
    }

    // Found by the template fuzz target's review: overflow panicked (debug builds) and a
    // huge end tried to make every item.
    #[test]
    fn sequences_at_the_edges_of_the_integers_are_errors_not_panics() {
        let err = |spec: &str| sequence_items(spec).unwrap_err();
        assert!(err("count=9223372036854775807 stride=2").contains("go past a 64-bit"));
        assert!(err("start=-9223372036854775807 end=9223372036854775807").contains("1000000"));
        assert!(err("start=1 end=99999999999").contains("more than the 1000000"));
        assert_eq!(
            seq("start=9223372036854775806 end=9223372036854775807"),
            ["9223372036854775806", "9223372036854775807"]
        );
        assert_eq!(
            seq("start=-9223372036854775806 end=-9223372036854775807 stride=-1"),
            ["-9223372036854775806", "-9223372036854775807"]
        );
        assert_eq!(seq("start=1 end=1000000").len(), MAX_ITEMS);
        // A width or precision of 20 digits overflowed; a big one allocated it per item.
        assert!(err("end=2 format=%99999999999999999999d").contains("problem formatting"));
        assert!(err("end=2 format=%.9999999d").contains("problem formatting"));
        assert_eq!(seq("end=1 format=%4096d")[0].len(), 4096);
    }

    #[test]
    fn short_form_sequences() {
        assert_eq!(seq("4"), ["1", "2", "3", "4"]);
        assert_eq!(seq("2-4"), ["2", "3", "4"]);
        assert_eq!(seq("0-8/4"), ["0", "4", "8"]);
        assert_eq!(seq("1-2:host%02d"), ["host01", "host02"]);
        assert_eq!(seq("0x0f-0x10:%x"), ["f", "10"]);
        assert_eq!(seq("010-011"), ["8", "9"]);
    }

    #[test]
    fn sequence_errors_read_as_ansible() {
        let err = |s: &str| sequence_items(s).unwrap_err();
        assert_eq!(err("start=1"), "must specify count or end in with_sequence");
        assert_eq!(
            err("end=3 count=3"),
            "can't specify both count and end in with_sequence"
        );
        assert_eq!(
            err("start=5 end=1"),
            "to count backwards make stride negative"
        );
        assert_eq!(
            err("start=1 end=5 stride=-1"),
            "to count forward don't make stride negative"
        );
        assert!(err("end=abc").ends_with("Invalid value provided for 'integer': 'abc'"));
        assert_eq!(err("end=3 format=x"), "bad formatting string: x");
        assert_eq!(
            err("end=3 foo=1"),
            "unrecognized arguments to with_sequence: ['foo']"
        );
        assert!(err("end=010").contains("'end' for 'sequence' lookup plugin"));
        assert_eq!(err("a-g"), "unknown sequence format: a-g");
        assert!(err("A-4/2").starts_with("Config 'start' for 'sequence' lookup plugin"));
    }

    #[test]
    fn printf_forms() {
        assert_eq!(printf_int("%d", -5).unwrap(), "-5");
        assert_eq!(printf_int("%05d", -5).unwrap(), "-0005");
        assert_eq!(printf_int("%-4d|", 7).unwrap(), "7   |");
        assert_eq!(printf_int("%4d", 7).unwrap(), "   7");
        assert_eq!(printf_int("%+d", 7).unwrap(), "+7");
        assert_eq!(printf_int("%#x", 255).unwrap(), "0xff");
        assert_eq!(printf_int("%#06x", 255).unwrap(), "0x00ff");
        assert_eq!(printf_int("%X", 255).unwrap(), "FF");
        assert_eq!(printf_int("%.3d", 7).unwrap(), "007");
        assert_eq!(printf_int("%.2f", 7).unwrap(), "7.00");
        assert_eq!(printf_int("%3s", 7).unwrap(), "  7");
        assert!(printf_int("%q", 7).is_none());
    }

    #[test]
    fn python_ints() {
        assert_eq!(parse_python_int("10"), Some(10));
        assert_eq!(parse_python_int("-3"), Some(-3));
        assert_eq!(parse_python_int("0x1F"), Some(31));
        assert_eq!(parse_python_int("0o17"), Some(15));
        assert_eq!(parse_python_int("00"), Some(0));
        assert_eq!(parse_python_int("07"), None);
        assert_eq!(parse_python_int(""), None);
    }
}
