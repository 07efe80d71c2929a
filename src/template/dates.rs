//! Dates as Ansible's templates see them: the `strftime` filter and Python's
//! `str(datetime)` for the template module's `template_mtime` and `template_run_date`.

use chrono::{DateTime, Local, TimeZone, Utc};
use minijinja::{Error, ErrorKind};

/// Python's `str(datetime)`: `YYYY-MM-DD HH:MM:SS`, with `.ffffff` only when there are
/// microseconds.
pub fn python_datetime<Tz: TimeZone>(at: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let micros = at.timestamp_subsec_micros();
    if micros == 0 {
        at.format("%Y-%m-%d %H:%M:%S").to_string()
    } else {
        format!("{}.{micros:06}", at.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// A file's modification time in local time, as Python's `datetime.fromtimestamp`.
pub fn local_mtime(path: &std::path::Path) -> Option<String> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(python_datetime(&DateTime::<Local>::from(modified)))
}

/// Now, in local time, as `datetime.datetime.now()` prints.
pub fn local_now() -> String {
    python_datetime(&Local::now())
}

/// Ansible's `strftime(format, second=None, utc=False)`.
pub fn strftime(
    format: &str,
    second: Option<minijinja::Value>,
    utc: Option<bool>,
) -> Result<String, Error> {
    let seconds = match second {
        None => {
            let now = Utc::now();
            now.timestamp() as f64 + f64::from(now.timestamp_subsec_micros()) / 1e6
        }
        Some(value) => {
            let parsed = f64::try_from(value.clone())
                .ok()
                .or_else(|| value.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
            parsed.ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("Invalid value for epoch value ({value})"),
                )
            })?
        }
    };
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).round() as u32;
    let at = Utc
        .timestamp_opt(whole as i64, nanos.min(999_999_999))
        .single()
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("Invalid value for epoch value ({seconds})"),
            )
        })?;
    let items: Vec<chrono::format::Item> = chrono::format::StrftimeItems::new(format).collect();
    if items
        .iter()
        .any(|i| matches!(i, chrono::format::Item::Error))
    {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("Invalid format string {format:?} for strftime"),
        ));
    }
    Ok(if utc.unwrap_or(false) {
        at.format_with_items(items.into_iter()).to_string()
    } else {
        at.with_timezone(&Local)
            .format_with_items(items.into_iter())
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_formats_epoch_seconds_in_utc_or_local_time() {
        let at = |s: f64| Some(minijinja::Value::from(s));
        assert_eq!(
            strftime("%Y-%m-%d %H:%M:%S", at(0.0), Some(true)).unwrap(),
            "1970-01-01 00:00:00"
        );
        assert_eq!(
            strftime("%d/%m/%y %a", at(86400.5), Some(true)).unwrap(),
            "02/01/70 Fri"
        );
        assert_eq!(
            strftime("%s", Some(minijinja::Value::from("1234")), Some(true)).unwrap(),
            "1234"
        );
        assert_eq!(
            strftime("%Y", Some(minijinja::Value::from("soon")), None)
                .unwrap_err()
                .to_string(),
            "invalid operation: Invalid value for epoch value (soon)"
        );
    }

    #[test]
    fn datetimes_print_as_python_prints_them() {
        let plain = Utc.timestamp_opt(86400, 0).unwrap();
        assert_eq!(python_datetime(&plain), "1970-01-02 00:00:00");
        let fine = Utc.timestamp_opt(86400, 1_500_000).unwrap();
        assert_eq!(python_datetime(&fine), "1970-01-02 00:00:00.001500");
    }
}
