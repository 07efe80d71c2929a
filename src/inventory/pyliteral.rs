//! Python's `ast.literal_eval`, as Ansible's INI inventory applies it to every variable value:
//! `5` is an int, `True` a bool, `'x'` a string, `[1, 2]` a list. Anything Python would
//! reject (`yes`, `/usr/bin/python3`, `0644`) is not an error: the caller keeps the text.

use serde_json::{Map, Number, Value};

/// The value Python's `ast.literal_eval(text)` returns, converted as Ansible converts it
/// (tuples and sets become lists, complex numbers and `...` become strings), or `None` when
/// Python would raise, in which case Ansible keeps the raw text.
pub fn literal_eval(text: &str) -> Option<Value> {
    let source = text.trim_start_matches([' ', '\t']);
    let tokens = tokenize(source)?;
    let mut parser = Parser { tokens, pos: 0 };
    let value = parser.expression()?;
    if parser.pos != parser.tokens.len() {
        return None;
    }
    Some(value.into_json())
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i128),
    Float(f64),
    /// An imaginary literal, kept as written: Ansible turns complex values into strings.
    Imaginary(String),
    Str(String),
    Bytes(String),
    Name(String),
    Punct(char),
    Ellipsis,
}

fn tokenize(src: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0c' {
            i += 1;
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '.' && chars.get(i + 1) == Some(&'.') && chars.get(i + 2) == Some(&'.') {
            tokens.push(Token::Ellipsis);
            i += 3;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let (token, next) = number(&chars, i)?;
            tokens.push(token);
            i = next;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if matches!(chars.get(i), Some('\'' | '"')) {
                let prefix = word.to_ascii_lowercase();
                let (token, next) = string(&chars, i, &prefix)?;
                tokens.push(token);
                i = next;
            } else {
                tokens.push(Token::Name(word));
            }
        } else if c == '\'' || c == '"' {
            let (token, next) = string(&chars, i, "")?;
            tokens.push(token);
            i = next;
        } else if "[](){},:+-".contains(c) {
            tokens.push(Token::Punct(c));
            i += 1;
        } else {
            return None;
        }
    }
    Some(tokens)
}

/// Reads a Python number literal starting at `start`; `None` for anything Python's tokenizer
/// rejects, such as `0644` (leading zeros) or `1_` (trailing underscore) or `12abc`.
fn number(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start;
    let lower = |i: usize| chars.get(i).map(|c| c.to_ascii_lowercase());
    if chars[i] == '0' && matches!(lower(i + 1), Some('x' | 'o' | 'b')) {
        let radix = match lower(i + 1) {
            Some('x') => 16,
            Some('o') => 8,
            _ => 2,
        };
        i += 2;
        let mut digits = String::new();
        loop {
            match chars.get(i) {
                Some('_') if chars.get(i + 1).is_some_and(|c| c.is_digit(radix)) => i += 1,
                Some(c) if c.is_digit(radix) => {
                    digits.push(*c);
                    i += 1;
                }
                _ => break,
            }
        }
        if digits.is_empty()
            || chars
                .get(i)
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            return None;
        }
        return Some((Token::Int(i128::from_str_radix(&digits, radix).ok()?), i));
    }

    let digit_run = |i: &mut usize, out: &mut String| -> Option<()> {
        while let Some(c) = chars.get(*i) {
            if c.is_ascii_digit() {
                out.push(*c);
                *i += 1;
            } else if *c == '_'
                && chars.get(*i + 1).is_some_and(char::is_ascii_digit)
                && !out.is_empty()
            {
                *i += 1;
            } else if *c == '_' {
                return None;
            } else {
                break;
            }
        }
        Some(())
    };

    let mut int_part = String::new();
    digit_run(&mut i, &mut int_part)?;
    let mut is_float = false;
    let mut text = int_part.clone();
    if chars.get(i) == Some(&'.') {
        is_float = true;
        i += 1;
        let mut frac = String::new();
        digit_run(&mut i, &mut frac)?;
        if int_part.is_empty() && frac.is_empty() {
            return None;
        }
        text.push('.');
        text.push_str(&frac);
    }
    if matches!(lower(i), Some('e')) {
        let mut j = i + 1;
        let mut exp = String::new();
        if let Some(sign @ ('+' | '-')) = chars.get(j) {
            exp.push(*sign);
            j += 1;
        }
        let mut digits = String::new();
        digit_run(&mut j, &mut digits)?;
        if digits.is_empty() {
            return None;
        }
        is_float = true;
        text.push('e');
        text.push_str(&exp);
        text.push_str(&digits);
        i = j;
    }
    if matches!(lower(i), Some('j')) {
        i += 1;
        if chars
            .get(i)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            return None;
        }
        let written: String = chars[start..i].iter().filter(|c| **c != '_').collect();
        return Some((Token::Imaginary(written), i));
    }
    if chars
        .get(i)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        return None;
    }
    if is_float {
        let text = if text.starts_with('.') {
            format!("0{text}")
        } else {
            text
        };
        return Some((Token::Float(text.parse().ok()?), i));
    }
    // Python 3 forbids leading zeros on non-zero decimal integers.
    if int_part.len() > 1 && int_part.starts_with('0') && int_part.chars().any(|c| c != '0') {
        return None;
    }
    Some((Token::Int(int_part.parse().ok()?), i))
}

/// Reads a string literal whose opening quote is at `quote_at`, with an optional prefix
/// (`r`, `b`, `u`, `rb`, ...). f-strings are not literals, so they fail.
fn string(chars: &[char], quote_at: usize, prefix: &str) -> Option<(Token, usize)> {
    let (raw, bytes) = match prefix {
        "" | "u" => (false, false),
        "r" => (true, false),
        "b" => (false, true),
        "rb" | "br" => (true, true),
        _ => return None,
    };
    let quote = chars[quote_at];
    let triple = chars.get(quote_at + 1) == Some(&quote) && chars.get(quote_at + 2) == Some(&quote);
    let mut i = quote_at + if triple { 3 } else { 1 };
    let mut out = String::new();
    loop {
        let c = *chars.get(i)?;
        if c == quote {
            if !triple {
                i += 1;
                break;
            }
            if chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                i += 3;
                break;
            }
            out.push(c);
            i += 1;
        } else if c == '\n' && !triple {
            return None;
        } else if c == '\\' {
            let next = *chars.get(i + 1)?;
            if raw {
                out.push('\\');
                out.push(next);
                i += 2;
                continue;
            }
            i += 2;
            match next {
                '\n' => {}
                '\\' | '\'' | '"' => out.push(next),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut value = next.to_digit(8)?;
                    for _ in 0..2 {
                        match chars.get(i).and_then(|c| c.to_digit(8)) {
                            Some(d) => {
                                value = value * 8 + d;
                                i += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(value)?);
                }
                'x' => {
                    let hex: String = chars.get(i..i + 2)?.iter().collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    i += 2;
                }
                'u' | 'U' if !bytes => {
                    let len = if next == 'u' { 4 } else { 8 };
                    let hex: String = chars.get(i..i + len)?.iter().collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    i += len;
                }
                // `\N{NAME}` needs the Unicode name table; too rare in inventories to carry it.
                'N' if !bytes => return None,
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        } else {
            if bytes && !c.is_ascii() {
                return None;
            }
            out.push(c);
            i += 1;
        }
    }
    Some((
        if bytes {
            Token::Bytes(out)
        } else {
            Token::Str(out)
        },
        i,
    ))
}

/// Python values that literal_eval can produce, before Ansible's conversion.
enum PyValue {
    Int(i128),
    Float(f64),
    Complex(String),
    Str(String),
    Bool(bool),
    None,
    Ellipsis,
    List(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
}

impl PyValue {
    fn into_json(self) -> Value {
        match self {
            PyValue::Int(i) => int_to_json(i),
            PyValue::Float(x) => Number::from_f64(x)
                .map(Value::Number)
                .unwrap_or_else(|| Value::String(python_float_repr(x))),
            PyValue::Complex(s) => Value::String(s),
            PyValue::Str(s) => Value::String(s),
            PyValue::Bool(b) => Value::Bool(b),
            PyValue::None => Value::Null,
            PyValue::Ellipsis => Value::String("...".into()),
            PyValue::List(items) => {
                Value::Array(items.into_iter().map(PyValue::into_json).collect())
            }
            PyValue::Dict(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.key_string(), v.into_json());
                }
                Value::Object(map)
            }
        }
    }

    /// Variables are JSON objects; Python's `str()` of a non-string key is the closest name.
    fn key_string(&self) -> String {
        match self {
            PyValue::Str(s) | PyValue::Complex(s) => s.clone(),
            PyValue::Int(i) => i.to_string(),
            PyValue::Float(x) => python_float_repr(*x),
            PyValue::Bool(b) => if *b { "True" } else { "False" }.into(),
            PyValue::None => "None".into(),
            PyValue::Ellipsis => "Ellipsis".into(),
            // Only tuples are hashable in Python, so only they can really be keys.
            PyValue::List(items) => {
                let parts: Vec<String> = items.iter().map(PyValue::key_string).collect();
                format!("({})", parts.join(", "))
            }
            PyValue::Dict(_) => String::new(),
        }
    }
}

fn int_to_json(i: i128) -> Value {
    if let Ok(v) = i64::try_from(i) {
        Value::from(v)
    } else if let Ok(v) = u64::try_from(i) {
        Value::from(v)
    } else {
        Number::from_f64(i as f64)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf".into() } else { "-inf".into() }
    } else if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        x.to_string()
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// literal_eval accepts `number`, `-number`, and `real +/- imaginary` (a complex literal),
    /// besides plain literals and containers. No other arithmetic.
    fn expression(&mut self) -> Option<PyValue> {
        let left = self.operand()?;
        if let Some(Token::Punct(op @ ('+' | '-'))) = self.peek().cloned() {
            let real = match left {
                PyValue::Int(i) => i as f64,
                PyValue::Float(x) => x,
                _ => return None,
            };
            self.pos += 1;
            let Some(Token::Imaginary(imag)) = self.peek().cloned() else {
                return None;
            };
            self.pos += 1;
            return Some(PyValue::Complex(format!(
                "({}{op}{imag})",
                python_float_repr(real).trim_end_matches(".0")
            )));
        }
        Some(left)
    }

    fn operand(&mut self) -> Option<PyValue> {
        if let Some(Token::Punct(sign @ ('+' | '-'))) = self.peek().cloned() {
            self.pos += 1;
            let negative = sign == '-';
            return match self.peek().cloned()? {
                Token::Int(i) => {
                    self.pos += 1;
                    Some(PyValue::Int(if negative { -i } else { i }))
                }
                Token::Float(x) => {
                    self.pos += 1;
                    Some(PyValue::Float(if negative { -x } else { x }))
                }
                Token::Imaginary(s) => {
                    self.pos += 1;
                    Some(PyValue::Complex(if negative {
                        format!("(-0-{s})")
                    } else {
                        s
                    }))
                }
                _ => None,
            };
        }
        self.atom()
    }

    fn atom(&mut self) -> Option<PyValue> {
        let token = self.peek().cloned()?;
        self.pos += 1;
        Some(match token {
            Token::Int(i) => PyValue::Int(i),
            Token::Float(x) => PyValue::Float(x),
            Token::Imaginary(s) => PyValue::Complex(s),
            Token::Ellipsis => PyValue::Ellipsis,
            Token::Str(first) => PyValue::Str(self.concat(first, false)?),
            Token::Bytes(first) => PyValue::Str(self.concat(first, true)?),
            Token::Name(name) => match name.as_str() {
                "True" => PyValue::Bool(true),
                "False" => PyValue::Bool(false),
                "None" => PyValue::None,
                "set" if self.eat('(') && self.eat(')') => PyValue::List(Vec::new()),
                _ => return None,
            },
            Token::Punct('[') => PyValue::List(self.items(']')?.0),
            Token::Punct('(') => {
                let (mut items, trailing_comma) = self.items(')')?;
                if items.len() == 1 && !trailing_comma {
                    items.pop()?
                } else {
                    PyValue::List(items)
                }
            }
            Token::Punct('{') => self.dict_or_set()?,
            _ => return None,
        })
    }

    /// Adjacent literals concatenate (`'a' 'b'`), but str and bytes do not mix.
    fn concat(&mut self, mut text: String, bytes: bool) -> Option<String> {
        loop {
            match self.peek() {
                Some(Token::Str(s)) if !bytes => text.push_str(s),
                Some(Token::Bytes(s)) if bytes => text.push_str(s),
                Some(Token::Str(_) | Token::Bytes(_)) => return None,
                _ => return Some(text),
            }
            self.pos += 1;
        }
    }

    /// Comma-separated expressions up to `close`; also tells whether a trailing comma was seen
    /// (which makes `(x,)` a tuple).
    fn items(&mut self, close: char) -> Option<(Vec<PyValue>, bool)> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.eat(close) {
                return Some((items, trailing_comma));
            }
            items.push(self.expression()?);
            trailing_comma = self.eat(',');
            if !trailing_comma {
                return self.eat(close).then_some((items, false));
            }
        }
    }

    fn dict_or_set(&mut self) -> Option<PyValue> {
        if self.eat('}') {
            return Some(PyValue::Dict(Vec::new()));
        }
        let first = self.expression()?;
        if self.eat(':') {
            let mut entries = vec![(first, self.expression()?)];
            loop {
                if !self.eat(',') {
                    return self.eat('}').then_some(PyValue::Dict(entries));
                }
                if self.eat('}') {
                    return Some(PyValue::Dict(entries));
                }
                let key = self.expression()?;
                if !self.eat(':') {
                    return None;
                }
                let value = self.expression()?;
                // A repeated key keeps its first position and takes the last value, as in Python.
                match entries
                    .iter_mut()
                    .find(|(k, _)| k.key_string() == key.key_string())
                {
                    Some(entry) => entry.1 = value,
                    None => entries.push((key, value)),
                }
            }
        }
        let mut items = vec![first];
        loop {
            if !self.eat(',') {
                break;
            }
            if self.peek() == Some(&Token::Punct('}')) {
                break;
            }
            items.push(self.expression()?);
        }
        if !self.eat('}') {
            return None;
        }
        // A set holds each value once; source order stands in for Python's hash order.
        let mut unique: Vec<PyValue> = Vec::new();
        for item in items {
            if !unique.iter().any(|u| u.key_string() == item.key_string()) {
                unique.push(item);
            }
        }
        Some(PyValue::List(unique))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(s: &str) -> Option<Value> {
        literal_eval(s)
    }

    #[test]
    fn numbers_follow_python_syntax() {
        assert_eq!(eval("5"), Some(json!(5)));
        assert_eq!(eval("-5"), Some(json!(-5)));
        assert_eq!(eval("+5"), Some(json!(5)));
        assert_eq!(eval("1_000"), Some(json!(1000)));
        assert_eq!(eval("0x1F"), Some(json!(31)));
        assert_eq!(eval("0o17"), Some(json!(15)));
        assert_eq!(eval("0b101"), Some(json!(5)));
        assert_eq!(eval("000"), Some(json!(0)));
        assert_eq!(eval("1.5"), Some(json!(1.5)));
        assert_eq!(eval(".5"), Some(json!(0.5)));
        assert_eq!(eval("5."), Some(json!(5.0)));
        assert_eq!(eval("1e3"), Some(json!(1000.0)));
        assert_eq!(eval("01.5"), Some(json!(1.5)));
        assert_eq!(eval("2j"), Some(json!("2j")));
        assert_eq!(eval("1+2j"), Some(json!("(1+2j)")));
        // Python rejects these; Ansible keeps the text.
        for rejected in [
            "0644", "1_", "1__0", "0x", "1e", "12abc", "1.2.3", "--1", "1+2", "-True",
        ] {
            assert_eq!(eval(rejected), None, "{rejected}");
        }
    }

    #[test]
    fn constants_and_names() {
        assert_eq!(eval("True"), Some(json!(true)));
        assert_eq!(eval("False"), Some(json!(false)));
        assert_eq!(eval("None"), Some(Value::Null));
        assert_eq!(eval("..."), Some(json!("...")));
        for name in [
            "true",
            "yes",
            "hello",
            "/usr/bin/python3",
            "a.b",
            "f(x)",
            "not True",
            "",
        ] {
            assert_eq!(eval(name), None, "{name}");
        }
    }

    #[test]
    fn strings_unquote_and_unescape() {
        assert_eq!(eval("'x'"), Some(json!("x")));
        assert_eq!(eval("\"quoted\""), Some(json!("quoted")));
        assert_eq!(eval(r"'a\nb'"), Some(json!("a\nb")));
        assert_eq!(eval(r"r'a\nb'"), Some(json!("a\\nb")));
        assert_eq!(eval(r"'\x41\101\u0041'"), Some(json!("AAA")));
        assert_eq!(eval(r"'\d'"), Some(json!("\\d")));
        assert_eq!(eval("'a' \"b\""), Some(json!("ab")));
        assert_eq!(eval("b'raw'"), Some(json!("raw")));
        assert_eq!(eval("'''tri'ple'''"), Some(json!("tri'ple")));
        assert_eq!(eval("'03#pa33w0rd'"), Some(json!("03#pa33w0rd")));
        assert_eq!(eval("'a' b'b'"), None);
        assert_eq!(eval("f'x'"), None);
        assert_eq!(eval("'open"), None);
    }

    #[test]
    fn containers() {
        assert_eq!(eval("[1, 'a', [True]]"), Some(json!([1, "a", [true]])));
        assert_eq!(eval("(1, 2)"), Some(json!([1, 2])));
        assert_eq!(eval("(1,)"), Some(json!([1])));
        assert_eq!(eval("(1)"), Some(json!(1)));
        assert_eq!(eval("()"), Some(json!([])));
        assert_eq!(eval("{'a': 1, 2: [3]}"), Some(json!({"a": 1, "2": [3]})));
        assert_eq!(eval("{1, 2, 1}"), Some(json!([1, 2])));
        assert_eq!(eval("set()"), Some(json!([])));
        assert_eq!(eval("{}"), Some(json!({})));
        assert_eq!(eval("[1, 2,]"), Some(json!([1, 2])));
        assert_eq!(eval("[1 2]"), None);
        assert_eq!(eval("{'a' 1}"), None);
    }

    #[test]
    fn comments_and_leading_blanks() {
        assert_eq!(eval("8080 # the port"), Some(json!(8080)));
        assert_eq!(eval("  7"), Some(json!(7)));
        assert_eq!(eval("hello # comment"), None);
        assert_eq!(eval("# only a comment"), None);
    }
}
