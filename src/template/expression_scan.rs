//! Reading template source as text, before minijinja sees it: whether a string is one
//! `{{ expr }}`, where its tags are, and which tag holds a position.

/// The inner expression when `s` is exactly one `{{ expr }}` and nothing else.
pub(super) fn single_expression(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?;
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let inner = inner.strip_suffix('-').unwrap_or(inner);
    // A `}}` inside (`{{ {'a': {'b': 1}} }}`) is left to the expression parser to judge,
    // as is a tag inside a string constant (`{{ lookup('pipe', 'echo {{ x }}') }}`).
    if opens_tag_outside_strings(inner) {
        return None;
    }
    Some(inner)
}

/// Whether `{{` or `{%` occurs in `expr` other than inside a quoted string constant.
pub(super) fn opens_tag_outside_strings(expr: &str) -> bool {
    let bytes = expr.as_bytes();
    outside_strings(expr).any(|i| bytes[i] == b'{' && matches!(bytes.get(i + 1), Some(b'{' | b'%')))
}

/// The positions of `expr`'s bytes that are not inside a quoted string constant (a
/// quote, and a backslash's escaped byte, count as inside).
pub(super) fn outside_strings(expr: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = expr.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let at = i;
            let b = bytes[at];
            i += 1;
            match quote {
                Some(_) if b == b'\\' => i += 1,
                Some(q) if b == q => quote = None,
                Some(_) => {}
                None if b == b'\'' || b == b'"' => quote = Some(b),
                None => return Some(at),
            }
        }
        None
    })
}

/// The inner text of every `{{ }}` and `{% %}` tag, in order.
pub(super) fn tags(source: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = source;
    let mut offset = 0;
    while let Some(start) = rest.find(['{']) {
        let after = &rest[start..];
        let close = if after.starts_with("{{") {
            "}}"
        } else if after.starts_with("{%") {
            "%}"
        } else {
            offset += start + 1;
            rest = &source[offset..];
            continue;
        };
        match after[2..].find(close) {
            Some(end) => {
                let inner = &after[2..2 + end];
                let inner = inner.strip_prefix(['-', '+']).unwrap_or(inner);
                let inner = inner.strip_suffix('-').unwrap_or(inner);
                out.push(inner);
                offset += start + 2 + end + 2;
                rest = &source[offset..];
            }
            None => break,
        }
    }
    out
}

/// The inner text of the tag around byte `pos` of `source`.
pub(super) fn tag_containing(source: &str, pos: usize) -> Option<&str> {
    let before = source.get(..=pos.min(source.len().saturating_sub(1)))?;
    let open = before
        .rfind("{{")
        .into_iter()
        .chain(before.rfind("{%"))
        .max()?;
    let close = if source[open..].starts_with("{{") {
        "}}"
    } else {
        "%}"
    };
    let end = open + 2 + source[open + 2..].find(close)?;
    let inner = &source[open + 2..end];
    let inner = inner.strip_prefix(['-', '+']).unwrap_or(inner);
    Some(inner.strip_suffix('-').unwrap_or(inner))
}

/// `if x == 1` -> `x == 1`; `for i in items` -> `items`; `set a = b` -> `b`.
pub(super) fn strip_statement_keyword(inner: &str) -> &str {
    let t = inner.trim();
    for kw in ["if ", "elif "] {
        if let Some(rest) = t.strip_prefix(kw) {
            return rest;
        }
    }
    if let Some(rest) = t.strip_prefix("for ")
        && let Some((_, iterable)) = rest.split_once(" in ")
    {
        // `for x in items if cond` / `recursive` trail the iterable.
        return iterable
            .split(" if ")
            .next()
            .unwrap_or(iterable)
            .trim_end_matches(" recursive");
    }
    if let Some(rest) = t.strip_prefix("set ")
        && let Some((_, value)) = rest.split_once('=')
    {
        return value;
    }
    t
}
