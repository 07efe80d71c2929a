//! YAML as Ansible's `to_yaml`/`to_nice_yaml` (PyYAML's `dump`, keys sorted) write it:
//! users diff these files against what Ansible produced.

use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `to_nice_yaml` (`default_flow_style=False`): block style throughout.
    Block,
    /// `to_yaml` (`default_flow_style=None`): a collection of scalars only is written
    /// inline (`[1, 2]`, `{a: 1}`), the rest in block style.
    FlowLeaves,
}

/// How a dump is written beyond its style.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub indent: usize,
    pub style: Style,
    /// PyYAML's `width`: past this column a long scalar folds at a space.
    pub width: usize,
    /// Strings with line breaks as literal blocks (`|`), as Ansible's callback dumper
    /// asks; `lossy` first makes the text fit one (trailing spaces, tabs and characters
    /// a block cannot hold go), as its pretty results do.
    pub literal_blocks: Option<Lossy>,
}

/// Whether a literal block may change the text to fit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Lossy(pub bool);

/// PyYAML's default `width`.
pub const DEFAULT_WIDTH: usize = 80;

pub fn dump(value: &Value, indent: usize, style: Style) -> String {
    dump_with(
        value,
        &Options {
            indent,
            style,
            width: DEFAULT_WIDTH,
            literal_blocks: None,
        },
    )
}

pub fn dump_with(value: &Value, options: &Options) -> String {
    let options = &Options {
        indent: options.indent.clamp(2, 9),
        ..*options
    };
    let (indent, style) = (options.indent, options.style);
    let mut out = String::new();
    if style == Style::FlowLeaves && is_leaf_collection(value) {
        out.push_str(&flow(value));
        out.push('\n');
        return out;
    }
    match value {
        Value::Array(a) if !a.is_empty() => {
            write_seq(&mut out, a, 0, options);
            end_open_block(&mut out, value, options);
        }
        Value::Object(m) if !m.is_empty() => {
            write_map(&mut out, m, 0, options);
            end_open_block(&mut out, value, options);
        }
        scalar => {
            write_scalar(&mut out, scalar, indent, options);
            out.push('\n');
            // PyYAML ends a lone plain scalar document with an explicit end marker (not
            // a quoted one, nor an empty collection).
            let plain = !out.starts_with(['\'', '"', '|', '[', '{']);
            if plain {
                out.push_str("...\n");
            }
        }
    }
    out
}

fn is_leaf_collection(value: &Value) -> bool {
    let scalar = |v: &Value| match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => true,
    };
    match value {
        Value::Array(a) => !a.is_empty() && a.iter().all(scalar),
        Value::Object(m) => !m.is_empty() && m.values().all(scalar),
        _ => false,
    }
}

fn flow(value: &Value) -> String {
    match value {
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}: {}", flow_string(k), flow(&m[k])))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::String(s) => flow_string(s),
        other => scalar_text(other),
    }
}

/// Inside `[...]`/`{...}` the flow indicators need quoting too.
fn flow_string(s: &str) -> String {
    if s.contains([',', '[', ']', '{', '}']) && !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    string_text(s)
}

fn write_map(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    col: usize,
    options: &Options,
) {
    let (indent, style) = (options.indent, options.style);
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            pad(out, col);
        }
        out.push_str(&string_text(key));
        out.push(':');
        let value = &map[key];
        if style == Style::FlowLeaves && is_leaf_collection(value) {
            out.push(' ');
            out.push_str(&flow(value));
            out.push('\n');
            continue;
        }
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                pad(out, col + indent);
                write_map(out, m, col + indent, options);
            }
            // PyYAML does not indent a list under a mapping key.
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                pad(out, col);
                write_seq(out, a, col, options);
            }
            v => {
                out.push(' ');
                write_scalar(out, v, col + indent, options);
                out.push('\n');
            }
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], col: usize, options: &Options) {
    let (indent, style) = (options.indent, options.style);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            pad(out, col);
        }
        // PyYAML pads the dash to the indent before a collection, not before a scalar.
        let nested = matches!(item, Value::Object(m) if !m.is_empty())
            || matches!(item, Value::Array(a) if !a.is_empty());
        out.push('-');
        if nested && !(style == Style::FlowLeaves && is_leaf_collection(item)) {
            out.push_str(&" ".repeat(indent - 1));
        } else {
            out.push(' ');
        }
        let inner = col + indent;
        if style == Style::FlowLeaves && is_leaf_collection(item) {
            out.push_str(&flow(item));
            out.push('\n');
            continue;
        }
        match item {
            Value::Object(m) if !m.is_empty() => write_map(out, m, inner, options),
            Value::Array(a) if !a.is_empty() => write_seq(out, a, inner, options),
            v => {
                write_scalar(out, v, inner, options);
                out.push('\n');
            }
        }
    }
}

fn pad(out: &mut String, col: usize) {
    out.extend(std::iter::repeat_n(' ', col));
}

/// A value scalar in block style, as PyYAML writes it: strings may fold onto lines
/// indented to `indent`, and line breaks make single-quoted text with blank lines (or a
/// literal block, when the options ask for them).
fn write_scalar(out: &mut String, value: &Value, indent: usize, options: &Options) {
    let Value::String(s) = value else {
        out.push_str(&scalar_text(value));
        return;
    };
    let width = options.width;
    if let Some(Lossy(lossy)) = options.literal_blocks
        && s.contains(BREAKS)
    {
        let text = if lossy { fit_for_block(s) } else { s.clone() };
        if allows_block(&text) {
            write_literal(out, &text, indent, options.indent);
        } else {
            out.push_str(&double_quoted(&text));
        }
        return;
    }
    let breaks = s.contains('\n');
    let special = s.chars().any(|c| c.is_control() && c != '\n');
    if special || s.contains(" \n") || s.contains("\n ") {
        out.push_str(&double_quoted(s));
    } else if !breaks && is_plain_safe(s) {
        write_folded(out, s, indent, false, width);
    } else {
        write_folded(out, s, indent, true, width);
    }
}

/// PyYAML ends a document whose last scalar is a literal block that keeps its final line
/// breaks (`|+`) with an explicit end marker.
fn end_open_block(out: &mut String, value: &Value, options: &Options) {
    let mut last = value;
    loop {
        last = match last {
            Value::Object(m) if !m.is_empty() => {
                let key = m.keys().max().expect("a key");
                &m[key]
            }
            Value::Array(a) if !a.is_empty() => a.last().expect("an item"),
            _ => break,
        };
    }
    let Some(Lossy(false)) = options.literal_blocks else {
        return;
    };
    let Value::String(text) = last else { return };
    let chars: Vec<char> = text.chars().collect();
    let keeps = match chars.as_slice() {
        [only] => BREAKS.contains(only),
        [.., a, b] => BREAKS.contains(a) && BREAKS.contains(b),
        _ => false,
    };
    if keeps && allows_block(text) {
        out.push_str("...\n");
    }
}

/// The line breaks YAML knows.
const BREAKS: &[char] = &['\n', '\u{85}', '\u{2028}', '\u{2029}'];

/// Ansible's lossy changes for a literal block (`_munge_data_for_lossy_yaml`): no
/// trailing white space, tabs expanded, no character PyYAML only writes escaped, and no
/// spaces before a line break.
fn fit_for_block(text: &str) -> String {
    let trimmed = text.trim_end();
    let mut expanded = String::with_capacity(trimmed.len());
    let mut column = 0;
    for c in trimmed.chars() {
        match c {
            '\t' => {
                let spaces = 8 - column % 8;
                expanded.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            c if BREAKS.contains(&c) || c == '\r' => {
                expanded.push(c);
                column = 0;
            }
            c => {
                expanded.push(c);
                column += 1;
            }
        }
    }
    let printable: String = expanded.chars().filter(|&c| is_printable(c)).collect();
    let mut out = String::with_capacity(printable.len());
    for c in printable.chars() {
        if BREAKS.contains(&c) {
            while out.ends_with(' ') {
                out.pop();
            }
        }
        out.push(c);
    }
    out
}

/// PyYAML's printable characters (with `allow_unicode`).
fn is_printable(c: char) -> bool {
    let n = c as u32;
    (n == 10
        || (32..=126).contains(&n)
        || n == 133
        || (160..=55295).contains(&n)
        || (57344..=65533).contains(&n)
        || (65536..1_114_111).contains(&n))
        && n != 65279
}

/// PyYAML's `allow_block`: no trailing space, no space before a line break, nothing it
/// must escape.
fn allows_block(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let space_break = chars
        .windows(2)
        .any(|w| w[0] == ' ' && BREAKS.contains(&w[1]));
    !(text.ends_with(' ') || space_break || chars.iter().any(|&c| !is_printable(c)))
}

/// PyYAML's `write_literal`: `|` with its chomping (and indentation) hints, then the
/// lines at `indent`.
fn write_literal(out: &mut String, text: &str, indent: usize, best_indent: usize) {
    let chars: Vec<char> = text.chars().collect();
    let mut hints = String::new();
    if let (Some(first), Some(last)) = (chars.first(), chars.last()) {
        if *first == ' ' || BREAKS.contains(first) {
            hints.push_str(&best_indent.to_string());
        }
        if !BREAKS.contains(last) {
            hints.push('-');
        } else if chars.len() == 1 || BREAKS.contains(&chars[chars.len() - 2]) {
            hints.push('+');
        }
    }
    out.push('|');
    out.push_str(&hints);
    out.push('\n');
    let mut breaks = true;
    let mut start = 0;
    for end in 0..=chars.len() {
        let ch = chars.get(end).copied();
        if breaks {
            if ch.is_none_or(|c| !BREAKS.contains(&c)) {
                for &br in &chars[start..end] {
                    out.push(if br == '\n' { '\n' } else { br });
                }
                if ch.is_some() {
                    pad(out, indent);
                }
                start = end;
            }
        } else if ch.is_none_or(|c| BREAKS.contains(&c)) {
            out.extend(&chars[start..end]);
            if ch.is_none() {
                out.push('\n');
            }
            start = end;
        }
        if let Some(c) = ch {
            breaks = BREAKS.contains(&c);
        }
    }
    // The caller ends the line: a literal block has ended its own.
    if out.ends_with('\n') {
        out.pop();
    }
}

fn current_column(out: &str) -> usize {
    out[out.rfind('\n').map_or(0, |i| i + 1)..].chars().count()
}

/// PyYAML's `write_plain`/`write_single_quoted`: a lone space after the line passed
/// `width` becomes a line break (not at either end of quoted text); in quoted text a
/// line break is written as a blank line and `'` doubles.
fn write_folded(out: &mut String, text: &str, indent: usize, quoted: bool, width: usize) {
    let chars: Vec<char> = text.chars().collect();
    let mut column = current_column(out);
    let emit = |out: &mut String, piece: &[char], column: &mut usize| {
        out.extend(piece);
        *column += piece.len();
    };
    let newline_indent = |out: &mut String, column: &mut usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent));
        *column = indent;
    };
    if quoted {
        out.push('\'');
        column += 1;
    }
    let (mut spaces, mut breaks) = (false, false);
    let mut start = 0;
    for end in 0..=chars.len() {
        let ch = chars.get(end).copied();
        if spaces {
            if ch != Some(' ') {
                let lone = start + 1 == end;
                let inside = !quoted || (start != 0 && end != chars.len());
                if lone && column > width && inside {
                    newline_indent(out, &mut column);
                } else {
                    emit(out, &chars[start..end], &mut column);
                }
                start = end;
            }
        } else if breaks {
            if ch != Some('\n') {
                // One more break than the text has: a lone break would read as a space.
                out.push('\n');
                for _ in start..end {
                    out.push('\n');
                }
                out.extend(std::iter::repeat_n(' ', indent));
                column = indent;
                start = end;
            }
        } else if (ch.is_none() || matches!(ch, Some(' ' | '\n' | '\''))) && start < end {
            emit(out, &chars[start..end], &mut column);
            start = end;
        }
        if quoted && ch == Some('\'') {
            emit(out, &['\'', '\''], &mut column);
            start = end + 1;
        }
        if let Some(c) = ch {
            spaces = c == ' ';
            breaks = c == '\n';
        }
    }
    if quoted {
        out.push('\'');
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            _ => n.to_string(),
        },
        Value::String(s) => string_text(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn string_text(s: &str) -> String {
    if s.chars().any(|c| c.is_control()) {
        return double_quoted(s);
    }
    if is_plain_safe(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Would a plain scalar read back as this same string?
fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return false;
    }
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        let second = s.chars().nth(1);
        let dash_like = matches!(first, '-' | '?' | ':');
        if !(dash_like && second.is_some_and(|c| !c.is_whitespace())) {
            return false;
        }
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    !resolves_to_non_string(s)
}

/// YAML 1.1's base 60 numbers (`1:30`, `0:00:00.5`), which PyYAML resolves as int or
/// float: the first part digits, the others at most two digits, the last one of a float
/// with a fraction.
fn sexagesimal(digits: &str) -> bool {
    let parts: Vec<&str> = digits.split(':').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return false;
    };
    // `[0-5]?[0-9]`
    let small = |p: &str| match p.as_bytes() {
        [d] => d.is_ascii_digit(),
        [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
        _ => false,
    };
    let last_ok = small(last)
        || last.split_once('.').is_some_and(|(whole, fraction)| {
            small(whole) && fraction.bytes().all(|b| b.is_ascii_digit())
        });
    !first.is_empty()
        && first.bytes().all(|b| b.is_ascii_digit())
        && middle.iter().all(|p| small(p))
        && last_ok
}

/// YAML 1.1 implicit types, as PyYAML resolves plain scalars.
fn resolves_to_non_string(s: &str) -> bool {
    if crate::booleans::pyyaml(s).is_some()
        || matches!(
            s,
            "~" | "null"
                | "Null"
                | "NULL"
                | ".inf"
                | "-.inf"
                | "+.inf"
                | ".Inf"
                | ".INF"
                | ".nan"
                | ".NaN"
                | ".NAN"
                | "<<"
                | "="
        )
    {
        return true;
    }
    let digits = s.trim_start_matches(['-', '+']).replace('_', "");
    if digits.is_empty() {
        return false;
    }
    let numeric = digits.parse::<f64>().is_ok() && !digits.contains(['i', 'n', 'I', 'N'])
        || digits.starts_with("0x") && u64::from_str_radix(&digits[2..], 16).is_ok()
        || digits.starts_with("0b") && u64::from_str_radix(&digits[2..], 2).is_ok()
        || sexagesimal(&digits);
    // Dates (2001-12-14) are timestamps to PyYAML.
    let date =
        s.len() >= 8 && s.as_bytes()[..4].iter().all(u8::is_ascii_digit) && s.as_bytes()[4] == b'-';
    numeric || date
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_style_with_sorted_keys() {
        let v = json!({"b": [1, "two", {"x": null}], "a": {"k": "v: w", "e": ""}, "t": "yes"});
        assert_eq!(
            dump(&v, 2, Style::Block),
            "a:\n  e: ''\n  k: 'v: w'\nb:\n- 1\n- two\n- x: null\nt: 'yes'\n"
        );
        assert_eq!(
            dump(&v, 4, Style::Block),
            "a:\n    e: ''\n    k: 'v: w'\nb:\n- 1\n- two\n-   x: null\nt: 'yes'\n"
        );
    }

    /// PyYAML 6 with `indent=4`: the dash is padded to the indent before a collection
    /// only.
    #[test]
    fn sequence_dashes_pad_only_before_collections() {
        let block = |v: Value| dump(&v, 4, Style::Block);
        assert_eq!(
            block(json!([[1, 2], [{"a": 1}]])),
            "-   - 1\n    - 2\n-   -   a: 1\n"
        );
        assert_eq!(block(json!([{}, [], "x"])), "- {}\n- []\n- x\n");
        assert_eq!(block(json!({"k": [[1]]})), "k:\n-   - 1\n");
        assert_eq!(block(json!(["a\nb"])), "- 'a\n\n    b'\n");
    }

    /// What Ansible's callback dumper (PyYAML with literal blocks) writes.
    #[test]
    fn literal_blocks_as_the_callback_writes_them() {
        let options = |lossy| Options {
            indent: 4,
            style: Style::Block,
            width: DEFAULT_WIDTH,
            literal_blocks: Some(Lossy(lossy)),
        };
        let dumped = |v: Value, lossy| dump_with(&v, &options(lossy));
        assert_eq!(
            dumped(json!({"msg": "äöü\néêè\nßï☺"}), true),
            "msg: |-\n    äöü\n    éêè\n    ßï☺\n"
        );
        assert_eq!(
            dumped(json!({"msg": "'line 1\n\n  line 2\n\n  '\n"}), true),
            "msg: |-\n    'line 1\n\n      line 2\n\n      '\n"
        );
        assert_eq!(dumped(json!({"a": "x\n"}), false), "a: |\n    x\n");
        assert_eq!(
            dumped(json!({"a": "x\n\n"}), false),
            "a: |+\n    x\n\n...\n"
        );
        assert_eq!(dumped(json!({"a": "x\n\n"}), true), "a: |-\n    x\n");
        assert_eq!(
            dumped(json!({"a": " x\ny"}), false),
            "a: |4-\n     x\n    y\n"
        );
        // Trailing spaces and tabs: not a block, unless pretty output may drop them.
        assert_eq!(dumped(json!({"a": "x \ny"}), false), "a: \"x \\ny\"\n");
        assert_eq!(
            dumped(json!({"a": "x \n\ty"}), true),
            "a: |-\n    x\n            y\n"
        );
    }

    #[test]
    fn base_60_numbers_are_quoted() {
        assert_eq!(
            dump(
                &json!({"d": "0:00:00.001094", "t": "12:30", "x": "1:2:3:abc", "y": "1:75"}),
                2,
                Style::Block
            ),
            "d: '0:00:00.001094'\nt: '12:30'\nx: 1:2:3:abc\ny: 1:75\n"
        );
    }

    #[test]
    fn scalars_and_empties() {
        assert_eq!(dump(&json!("abc"), 2, Style::Block), "abc\n...\n");
        assert_eq!(dump(&json!("a: b"), 2, Style::Block), "'a: b'\n");
        assert_eq!(dump(&json!(""), 2, Style::Block), "''\n");
        assert_eq!(dump(&json!(null), 2, Style::Block), "null\n...\n");
        assert_eq!(
            dump(
                &json!({"a": [], "b": {}, "c": 1.0, "d": "1.5", "e": [{}]}),
                2,
                Style::Block
            ),
            "a: []\nb: {}\nc: 1.0\nd: '1.5'\ne:\n- {}\n"
        );
        assert_eq!(dump(&json!(["a\nb"]), 2, Style::Block), "- 'a\n\n  b'\n");
    }

    /// What PyYAML 6 (`yaml.dump(v, allow_unicode=True, default_flow_style=False)`)
    /// wrote for each.
    #[test]
    fn long_and_multi_line_strings_fold_as_pyyaml_folds_them() {
        let block = |v: Value| dump(&v, 2, Style::Block);
        assert_eq!(
            block(json!({"k": "line one\nline two\n"})),
            "k: 'line one\n\n  line two\n\n  '\n"
        );
        assert_eq!(block(json!({"m": "\nlead"})), "m: '\n\n  lead'\n");
        assert_eq!(block(json!({"x": "a \nb"})), "x: \"a \\nb\"\n");
        assert_eq!(block(json!({"t": "tab\there"})), "t: \"tab\\there\"\n");
        assert_eq!(
            block(json!({"long": "word ".repeat(25)})),
            "long: 'word word word word word word word word word word word word word word word\n  word word word word word word word word word word '\n"
        );
        assert_eq!(
            block(json!([format!("{}end", "word ".repeat(20))])),
            "- word word word word word word word word word word word word word word word word\n  word word word word end\n"
        );
        assert_eq!(
            block(
                json!({"q": "it's a quite long single quoted: value that should be folded at the eighty col mark yes"})
            ),
            "q: 'it''s a quite long single quoted: value that should be folded at the eighty col\n  mark yes'\n"
        );
        assert_eq!(
            block(json!({"a": {"b": {"c": format!("{} y z", "x".repeat(90))}}})),
            format!("a:\n  b:\n    c: {}\n      y z\n", "x".repeat(90))
        );
        assert_eq!(
            block(
                json!({"sp": "two  spaces  between words make no fold points here at all, nope, none at all really"})
            ),
            "sp: two  spaces  between words make no fold points here at all, nope, none at all\n  really\n"
        );
    }

    #[test]
    fn to_yaml_writes_collections_of_scalars_inline() {
        let v = json!({"b": [1, "x,y"], "a": {"k": "v"}, "c": [{"d": 1}, [2, 3]], "n": {"m": {"o": true}}});
        assert_eq!(
            dump(&v, 2, Style::FlowLeaves),
            "a: {k: v}\nb: [1, 'x,y']\nc:\n- {d: 1}\n- [2, 3]\nn:\n  m: {o: true}\n"
        );
        assert_eq!(dump(&json!({"a": 1}), 2, Style::FlowLeaves), "{a: 1}\n");
    }
}
