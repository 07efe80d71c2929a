//! Template errors: what failed and Ansible's (Jinja's) words for it, from minijinja's.

use minijinja::{Error as MjError, ErrorKind};

use super::zero_division;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error("{}", .missing.clone().unwrap_or_else(|| format!("'{}' is undefined", .name)))]
    Undefined {
        name: String,
        expr: String,
        /// Ansible's words when every variable is defined but a value lacks the attribute
        /// asked for ("object of type 'dict' has no attribute 'x'"); `name` is then the
        /// expression that came out undefined.
        missing: Option<String>,
    },
    #[error("template error in `{}`: {message}", short(.expr))]
    Syntax {
        expr: String,
        message: String,
        /// The template's line the error is on, when the engine knows it.
        line: Option<usize>,
    },
    #[error("template error while rendering `{}`: {message}", short(.expr))]
    Render {
        expr: String,
        message: String,
        line: Option<usize>,
    },
}

/// A template quoted in a one-line message: a whole template file would drown it.
fn short(expr: &str) -> String {
    let first = expr.lines().next().unwrap_or("");
    if first.len() == expr.len() && first.chars().count() <= 80 {
        return first.to_string();
    }
    let cut: String = first.chars().take(60).collect();
    format!("{cut}...")
}

impl TemplateError {
    /// The same error, quoting `shown` (the user's text) instead of what was compiled.
    pub(super) fn shown_as(mut self, shown: &str) -> TemplateError {
        match &mut self {
            TemplateError::Undefined { expr, .. }
            | TemplateError::Syntax { expr, .. }
            | TemplateError::Render { expr, .. } => *expr = shown.to_string(),
        }
        self
    }

    /// The error alone, in Ansible's words ("'x' is undefined", "Syntax error in
    /// template: Encountered unknown tag 'x'."), without the template it came from.
    pub fn cause(&self) -> String {
        match self {
            TemplateError::Undefined { .. } => self.to_string(),
            TemplateError::Syntax { message, line, .. } => {
                let message = without_line(message, *line);
                let message = message.strip_prefix("syntax error: ").unwrap_or(message);
                format!("Syntax error in template: {}", jinja_syntax_words(message))
            }
            TemplateError::Render { message, line, .. } => {
                let message = without_line(message, *line);
                match unknown_callable(message) {
                    Some(words) => format!("Syntax error in template: {words}"),
                    None => message
                        .strip_prefix("invalid operation: ")
                        .unwrap_or(message)
                        .to_string(),
                }
            }
        }
    }

    /// The error of a conditional (an expression) as Ansible 2.19+ words it, the text of
    /// its exception: "Error while evaluating conditional: 'x' is undefined", "Error
    /// rendering expression: division by zero", "Syntax error in expression: ...".
    pub fn conditional_message(&self) -> String {
        match self {
            TemplateError::Undefined { .. } => {
                format!("Error while evaluating conditional: {self}")
            }
            TemplateError::Render { message, line, .. }
                if unknown_callable(without_line(message, *line)).is_none() =>
            {
                format!("Error rendering expression: {}", self.cause())
            }
            TemplateError::Syntax { .. } | TemplateError::Render { .. } => {
                let cause = self.cause();
                let words = cause
                    .strip_prefix("Syntax error in template: ")
                    .unwrap_or(&cause);
                format!("Syntax error in expression: {words}")
            }
        }
    }

    /// The line of the template the error is on, for a syntax error (an unknown filter or
    /// test counts, as Jinja finds those when it compiles): Ansible shows that line.
    pub fn syntax_line(&self) -> Option<usize> {
        match self {
            TemplateError::Syntax { line, .. } => *line,
            TemplateError::Render { message, line, .. } => {
                unknown_callable(without_line(message, *line)).and(*line)
            }
            TemplateError::Undefined { .. } => None,
        }
    }

    /// The template text that failed.
    pub fn expr(&self) -> &str {
        match self {
            TemplateError::Undefined { expr, .. }
            | TemplateError::Syntax { expr, .. }
            | TemplateError::Render { expr, .. } => expr,
        }
    }
}

/// minijinja reports `1 + undefined` as an invalid operation; Ansible calls it undefined.
pub(super) fn is_undefined_operand(e: &MjError) -> bool {
    e.kind() == ErrorKind::InvalidOperation && e.detail().is_some_and(|d| d.contains("undefined"))
}

pub(super) fn classify(e: MjError, expr: &str) -> TemplateError {
    let message = error_message(&e, expr);
    if e.kind() == ErrorKind::SyntaxError {
        TemplateError::Syntax {
            expr: expr.to_string(),
            message,
            line: e.line(),
        }
    } else {
        TemplateError::Render {
            expr: expr.to_string(),
            message,
            line: e.line(),
        }
    }
}

pub(super) fn zero_division_error(shown: &str) -> TemplateError {
    TemplateError::Render {
        expr: shown.to_string(),
        message: zero_division::MESSAGE.into(),
        line: None,
    }
}

/// `message` without the " (line N)" that [`error_message`] added.
fn without_line(message: &str, line: Option<usize>) -> &str {
    line.and_then(|n| message.strip_suffix(&format!(" (line {n})")))
        .unwrap_or(message)
}

/// Jinja's words for minijinja's syntax errors, where they differ.
fn jinja_syntax_words(message: &str) -> String {
    if let Some(tag) = message.strip_prefix("unknown statement ") {
        return format!("Encountered unknown tag '{tag}'.");
    }
    match message {
        "unexpected end of variable block" => "unexpected 'end of print statement'".into(),
        other => other.to_string(),
    }
}

/// Jinja's "No filter named 'x'." for minijinja's unknown filter or test.
fn unknown_callable(message: &str) -> Option<String> {
    let (kind, rest) = message
        .strip_prefix("unknown filter: filter ")
        .map(|rest| ("filter", rest))
        .or_else(|| {
            message
                .strip_prefix("unknown test: test ")
                .map(|rest| ("test", rest))
        })?;
    let name = rest.strip_suffix(" is unknown")?;
    Some(match super::python_plugins::not_loaded() {
        // The plugin may be among those Python could not load.
        Some(why) => format!("No {kind} named '{name}' ({why})."),
        None => format!("No {kind} named '{name}'."),
    })
}

/// minijinja's text with its "(in <string>:N)" suffix replaced by "(line N)", kept only
/// when the template has more than one line.
pub(super) fn error_message(e: &MjError, source: &str) -> String {
    let text = e.to_string();
    let Some(i) = text.rfind(" (in <") else {
        return text;
    };
    match e.line() {
        Some(line) if source.contains('\n') => format!("{} (line {line})", &text[..i]),
        _ => text[..i].to_string(),
    }
}
