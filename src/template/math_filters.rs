//! Ansible's math filters (`log`, `pow`, `root`, `human_readable`, `human_to_bytes`,
//! `rekey_on_member`), with the results and messages of ansible-core's mathstuff.

use minijinja::value::{Kwargs, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind};

use super::filters::python_string_repr as repr;

pub fn register(env: &mut Environment<'static>) {
    env.add_filter("log", log);
    env.add_filter("pow", pow);
    env.add_filter("root", root);
    env.add_filter("human_readable", human_readable);
    env.add_filter("human_to_bytes", human_to_bytes);
    env.add_filter("rekey_on_member", rekey_on_member);
}

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// A number as Python's math functions take one (booleans count, as in Python).
fn number(value: &MjValue, filter: &str) -> Result<f64, MjError> {
    match value.kind() {
        ValueKind::Number | ValueKind::Bool => {
            f64::try_from(value.clone()).or_else(|_| Ok(if value.is_true() { 1.0 } else { 0.0 }))
        }
        _ => Err(error(format!("{filter}() can only be used on numbers"))),
    }
}

fn math_domain(result: f64) -> Result<f64, MjError> {
    if result.is_nan() {
        return Err(error("math domain error"));
    }
    Ok(result)
}

/// `log(base=e)`; base 10 through log10, as Python's exact `log10`.
fn log(value: MjValue, base: Option<MjValue>) -> Result<f64, MjError> {
    let x = number(&value, "log")?;
    let base = base.map(|b| number(&b, "log")).transpose()?;
    math_domain(match base {
        None => x.ln(),
        Some(10.0) => x.log10(),
        Some(b) => x.ln() / b.ln(),
    })
}

fn pow(value: MjValue, exponent: MjValue) -> Result<f64, MjError> {
    Ok(number(&value, "pow")?.powf(number(&exponent, "pow")?))
}

/// `root(base=2)`: the square root, or `x ** (1 / base)`.
fn root(value: MjValue, base: Option<MjValue>) -> Result<f64, MjError> {
    let x = number(&value, "root")?;
    let base = base.map(|b| number(&b, "root")).transpose()?.unwrap_or(2.0);
    let result = if base == 2.0 {
        x.sqrt()
    } else {
        x.powf(1.0 / base)
    };
    result
        .is_finite()
        .then_some(result)
        .filter(|r| !r.is_nan())
        .ok_or_else(|| error("root() can only be used on numbers"))
}

/// Ansible's unit letters and their sizes, largest first.
const SIZE_RANGES: [(char, f64); 9] = [
    ('Y', 1_208_925_819_614_629_174_706_176.0),
    ('Z', 1_180_591_620_717_411_303_424.0),
    ('E', 1_152_921_504_606_846_976.0),
    ('P', 1_125_899_906_842_624.0),
    ('T', 1_099_511_627_776.0),
    ('G', 1_073_741_824.0),
    ('M', 1_048_576.0),
    ('K', 1024.0),
    ('B', 1.0),
];

/// `human_readable(isbits=False, unit=None)`: `10.00 KB`, `1.00 Bytes`, `0.10 Gb`.
fn human_readable(value: MjValue, kwargs: Kwargs) -> Result<String, MjError> {
    let isbits = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    let unit: Option<String> = kwargs.get("unit")?;
    kwargs.assert_all_used()?;
    let size = match value.kind() {
        ValueKind::Number | ValueKind::Bool => number(&value, "human_readable")?,
        _ => return Err(error("human_readable() failed on bad input")),
    };
    let base = if isbits { "bits" } else { "Bytes" };
    let wanted = unit
        .as_deref()
        .and_then(|u| u.chars().next())
        .map(|c| c.to_ascii_uppercase());
    let (suffix, limit) = SIZE_RANGES
        .iter()
        .copied()
        .find(|(letter, limit)| match wanted {
            None => size >= *limit,
            Some(w) => w == *letter,
        })
        .unwrap_or(SIZE_RANGES[SIZE_RANGES.len() - 1]);
    let suffix = if limit == 1.0 {
        base.to_string()
    } else {
        format!("{suffix}{}", &base[..1])
    };
    Ok(format!("{:.2} {suffix}", size / limit))
}

/// `human_to_bytes(default_unit=None, isbits=False)`: `'10.00 KB'` is 10240.
fn human_to_bytes(
    value: MjValue,
    default_unit: Option<String>,
    kwargs: Kwargs,
) -> Result<i64, MjError> {
    let default_unit = kwargs
        .get::<Option<String>>("default_unit")?
        .or(default_unit);
    let isbits = kwargs.get::<Option<bool>>("isbits")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = super::filters::python_str(&value);
    let cant = || {
        error(format!(
            "human_to_bytes() can't interpret following string: {text}"
        ))
    };
    let trimmed = text.trim_end();
    let digits_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (num, rest) = trimmed.split_at(digits_end);
    let unit = rest.trim_start();
    let valid_number = !num.is_empty()
        && num.matches('.').count() <= 1
        && !num.ends_with('.')
        && num.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !valid_number || !unit.chars().all(|c| c.is_ascii_alphabetic()) {
        return Err(cant());
    }
    let num: f64 = num.parse().map_err(|_| cant())?;
    let unit = if unit.is_empty() {
        default_unit
    } else {
        Some(unit.to_string())
    };
    let Some(unit) = unit else {
        return Ok(num.round() as i64);
    };
    let key = unit
        .chars()
        .next()
        .map(|c| c.to_ascii_uppercase())
        .unwrap_or('B');
    let Some((_, limit)) = SIZE_RANGES.iter().find(|(l, _)| *l == key) else {
        return Err(error(format!(
            "human_to_bytes() failed to convert {text} (unit = {unit}). The suffix must be one \
             of Y, Z, E, P, T, G, M, K, B"
        )));
    };
    if unit.chars().count() > 1 {
        let (class, class_name) = if isbits { ('b', "bit") } else { ('B', "byte") };
        let names = [
            ('B', "byte", "bit"),
            ('K', "kilobyte", "kilobit"),
            ('M', "megabyte", "megabit"),
            ('G', "gigabyte", "gigabit"),
            ('T', "terabyte", "terabit"),
            ('P', "petabyte", "petabit"),
            ('E', "exabyte", "exabit"),
            ('Z', "zetabyte", "zetabit"),
            ('Y', "yottabyte", "yottabit"),
        ];
        let (_, bytes_name, bits_name) = names
            .iter()
            .find(|(l, _, _)| *l == key)
            .copied()
            .unwrap_or(names[0]);
        let long = if isbits { bits_name } else { bytes_name };
        let short = if key == 'B' {
            class.to_string()
        } else {
            format!("{key}{class}")
        };
        if unit.to_lowercase() != long && unit != short {
            let expect = if key == 'B' {
                format!("expect {class} or {class_name}")
            } else {
                format!("expect {key}{class} or {key}")
            };
            return Err(error(format!(
                "human_to_bytes() failed to convert {text}. Value is not a valid string ({expect})"
            )));
        }
    }
    Ok((num * limit).round() as i64)
}

/// `rekey_on_member(key, duplicates='error')`: a dict of the (list or dict of) dicts by
/// each one's `key`.
fn rekey_on_member(data: MjValue, key: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let duplicates = kwargs
        .get::<Option<String>>("duplicates")?
        .unwrap_or_else(|| "error".into());
    kwargs.assert_all_used()?;
    if duplicates != "error" && duplicates != "overwrite" {
        return Err(error(format!(
            "duplicates parameter to rekey_on_member has unknown value {}",
            repr(&duplicates)
        )));
    }
    let items: Vec<MjValue> = match data.kind() {
        ValueKind::Map => data
            .try_iter()?
            .map(|k| data.get_item(&k).unwrap_or_default())
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => data.try_iter()?.collect(),
        _ => return Err(error("Type is not a valid list, set, or dict")),
    };
    let mut out: Vec<(MjValue, MjValue)> = Vec::new();
    for item in items {
        if item.kind() != ValueKind::Map {
            return Err(error("List item is not a valid dict"));
        }
        let member = item.get_item(&key).unwrap_or_default();
        if member.is_undefined() {
            return Err(error(format!(
                "Key {} was not found.",
                super::filters::python_repr_of(&key)
            )));
        }
        match out.iter_mut().find(|(k, _)| *k == member) {
            Some(_) if duplicates == "error" => {
                return Err(error(format!(
                    "Key {} is not unique, cannot convert to dict.",
                    super::filters::python_repr_of(&member)
                )));
            }
            Some(slot) => slot.1 = item,
            None => out.push((member, item)),
        }
    }
    Ok(MjValue::from_iter(out))
}

#[cfg(test)]
mod unit {
    use serde_json::json;

    fn v(expr: &str) -> serde_json::Value {
        crate::template::Templar::new()
            .eval_expr(expr, &minijinja::Value::UNDEFINED)
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    fn err(expr: &str) -> String {
        crate::template::Templar::new()
            .eval_expr(expr, &minijinja::Value::UNDEFINED)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn logarithms_powers_and_roots() {
        assert_eq!(v("1 | log"), json!(0.0));
        assert_eq!(v("100 | log(10)"), json!(2.0));
        assert_eq!(v("21 | log(21)"), json!(1.0));
        assert!(
            v("2.3 | log(42) | string")
                .as_str()
                .unwrap()
                .starts_with("0.222841")
        );
        assert_eq!(v("2 | pow(4)"), json!(16.0));
        assert_eq!(v("4 | root"), json!(2.0));
        assert_eq!(v("9 | root(1)"), json!(9.0));
        assert!(
            v("9 | root(6) | string")
                .as_str()
                .unwrap()
                .starts_with("1.4422495")
        );
        for filter in ["log", "pow(4)", "root"] {
            let name = filter.split('(').next().unwrap();
            assert!(
                err(&format!("'yo' | {filter}"))
                    .contains(&format!("{name}() can only be used on numbers"))
            );
        }
    }

    #[test]
    fn human_sizes_both_ways() {
        assert_eq!(v("1 | human_readable"), json!("1.00 Bytes"));
        assert_eq!(v("1 | human_readable(isbits=True)"), json!("1.00 bits"));
        assert_eq!(v("10240 | human_readable"), json!("10.00 KB"));
        assert_eq!(v("102400000 | human_readable"), json!("97.66 MB"));
        assert_eq!(v("102400000 | human_readable(unit='G')"), json!("0.10 GB"));
        assert_eq!(
            v("102400000 | human_readable(isbits=True, unit='G')"),
            json!("0.10 Gb")
        );
        assert!(err("'monkeys' | human_readable").contains("failed on bad input"));
        for (text, bytes) in [
            ("0", 0),
            ("0.1", 0),
            ("0.9", 1),
            ("10.00 KB", 10240),
            ("11 MB", 11534336),
            ("1.1 GB", 1181116006),
            ("2 kilobyte", 2048),
        ] {
            assert_eq!(
                v(&format!("'{text}' | human_to_bytes")),
                json!(bytes),
                "{text}"
            );
        }
        assert_eq!(v("'10.00 Kb' | human_to_bytes(isbits=True)"), json!(10240));
        assert_eq!(v("10 | human_to_bytes('M')"), json!(10485760));
        assert!(
            err("'10.00 foo' | human_to_bytes")
                .contains("human_to_bytes() failed to convert 10.00 foo")
        );
        assert!(
            err("'10 Mb' | human_to_bytes")
                .contains("Value is not a valid string (expect MB or M)")
        );
        assert!(err("'x' | human_to_bytes").contains("can't interpret following string: x"));
    }

    #[test]
    fn rekey_on_member_by_a_members_value() {
        assert_eq!(
            v("[{'proto': 'eigrp', 'n': 1}, {'proto': 'ospf', 'n': 2}] | rekey_on_member('proto')"),
            json!({"eigrp": {"proto": "eigrp", "n": 1}, "ospf": {"proto": "ospf", "n": 2}})
        );
        assert_eq!(
            v(
                "{'a': {'p': 'x'}, 'b': {'p': 'x', 'n': 2}} | rekey_on_member('p', duplicates='overwrite')"
            ),
            json!({"x": {"p": "x", "n": 2}})
        );
        assert!(
            err("[] | rekey_on_member('a', duplicates='boo')")
                .contains("duplicates parameter to rekey_on_member has unknown value 'boo'")
        );
        assert!(
            err("'minkeys' | rekey_on_member('a')")
                .contains("Type is not a valid list, set, or dict")
        );
        assert!(err("[True] | rekey_on_member('a')").contains("List item is not a valid dict"));
        assert!(err("[{'b': 1}] | rekey_on_member('a')").contains("Key 'a' was not found."));
        assert!(
            err("[{'a': 1}, {'a': 1}] | rekey_on_member('a')")
                .contains("Key 1 is not unique, cannot convert to dict.")
        );
    }
}
