//! Python's ZeroDivisionError for `/`: minijinja divides as IEEE floats (`5 / 0` is
//! `inf`), where Jinja on Python raises "division by zero", which Ansible's users see as
//! their task's failure. minijinja has no hook on its operators, so a value that comes
//! out infinite or NaN from an expression that divides is taken for that error. `'inf' |
//! float` divides nothing and stays a float.

use minijinja::value::{Value as MjValue, ValueKind};

pub(super) const MESSAGE: &str = "division by zero";

/// Whether `expr` (the inside of `{{ }}`) divides with `/` outside its string constants.
fn divides(expr: &str) -> bool {
    let bytes = expr.as_bytes();
    let mut outside = super::expression_scan::outside_strings(expr);
    while let Some(i) = outside.next() {
        if bytes[i] == b'/' {
            if bytes.get(i + 1) != Some(&b'/') {
                return true;
            }
            // `//`, floor division, is not this check's.
            outside.next();
        }
    }
    false
}

fn holds_non_finite(value: &MjValue) -> bool {
    match value.kind() {
        ValueKind::Number => f64::try_from(value.clone()).is_ok_and(|f| !f.is_finite()),
        ValueKind::Seq => value
            .try_iter()
            .is_ok_and(|mut items| items.any(|v| holds_non_finite(&v))),
        ValueKind::Map => value.try_iter().is_ok_and(|mut keys| {
            keys.any(|k| value.get_item(&k).is_ok_and(|v| holds_non_finite(&v)))
        }),
        _ => false,
    }
}

/// Whether `value`, what `expr` evaluated to, stands for Python's ZeroDivisionError.
pub(super) fn divided_by_zero(expr: &str, value: &MjValue) -> bool {
    divides(expr) && holds_non_finite(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_division_giving_a_non_finite_value_counts() {
        let inf = MjValue::from(f64::INFINITY);
        assert!(divided_by_zero("5 / 0 | int", &inf));
        assert!(divided_by_zero(
            "[1, 5 / x]",
            &MjValue::from(vec![1.0, f64::NAN])
        ));
        assert!(!divided_by_zero("'inf' | float", &inf));
        assert!(!divided_by_zero("'a/b' ~ x", &inf));
        assert!(!divided_by_zero("5 // 2", &inf));
        assert!(!divided_by_zero("5 / 2", &MjValue::from(2.5)));
    }
}
