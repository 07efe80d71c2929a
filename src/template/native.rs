//! Ansible's native concatenation for a template that is more than one `{{ expr }}`: its
//! output is a list of nodes (each `{{ }}` value that is not None, each run of literal
//! text), and one node alone keeps its type (`{% for x in [1] %}{{ x }}{% endfor %}` is
//! the integer 1, `{% if false %}x{% endif %}` is None); more than one are joined as text.
//!
//! minijinja renders to text only, so the formatter notes what each `{{ }}` printed while
//! a native rendering is under way on this thread ([`Recording`]); a rendering whose text
//! is exactly what one value printed had no literal text, and gives that value.

use std::cell::RefCell;

use minijinja::value::Value as MjValue;

#[derive(Default)]
struct Outputs {
    first: Option<MjValue>,
    values: usize,
    printed: usize,
}

thread_local! {
    /// One entry per rendering under way on this thread, innermost last; `None` for one
    /// that does not record (a template rendered while another renders).
    static RECORDINGS: RefCell<Vec<Option<Outputs>>> = const { RefCell::new(Vec::new()) };
}

/// What one rendering printed, while it lives; dropped (even by a panic) it stops.
pub(super) struct Recording {
    depth: usize,
}

impl Recording {
    /// Starts a rendering: recording its values for a native result, or not (`record`
    /// false), so that a rendering inside another does not count as the outer one's.
    pub fn start(record: bool) -> Recording {
        RECORDINGS.with(|r| {
            let mut stack = r.borrow_mut();
            stack.push(record.then(Outputs::default));
            Recording { depth: stack.len() }
        })
    }

    /// The native result of a rendering that printed `rendered`: `Some(value)` when one
    /// value and no literal text made it, `Some(None)` when nothing did, else `None`
    /// (the text stands).
    pub fn finish(self, rendered: &str) -> Option<MjValue> {
        let outputs = RECORDINGS.with(|r| {
            let mut stack = r.borrow_mut();
            stack.truncate(self.depth);
            stack.pop().flatten()
        });
        std::mem::forget(self);
        let outputs = outputs?;
        match (outputs.values, outputs.first) {
            (0, _) if rendered.is_empty() => Some(MjValue::from(())),
            (1, Some(value)) if outputs.printed == rendered.len() => Some(value),
            _ => None,
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RECORDINGS.with(|r| r.borrow_mut().truncate(self.depth - 1));
    }
}

/// Called by the formatter for every `{{ }}` value it printed (`printed` bytes).
pub(super) fn note(value: &MjValue, printed: usize) {
    if value.is_none() {
        return;
    }
    RECORDINGS.with(|r| {
        if let Some(Some(outputs)) = r.borrow_mut().last_mut() {
            outputs.values += 1;
            outputs.printed += printed;
            if outputs.first.is_none() {
                outputs.first = Some(value.clone());
            }
        }
    });
}

/// Whether an undefined value hides inside a list or mapping the template made
/// (`[{'key': missing}]`): Ansible fails on it when it finalizes the result, where
/// minijinja would serialize it as None. Lazy objects (`hostvars`) are not walked.
pub(super) fn holds_undefined(value: &MjValue) -> bool {
    use minijinja::value::{ObjectRepr, ValueKind};
    match value.kind() {
        ValueKind::Undefined => true,
        ValueKind::Seq | ValueKind::Map => {
            let plain = value.as_object().is_none_or(|o| {
                matches!(o.repr(), ObjectRepr::Seq | ObjectRepr::Map)
                    && (o.downcast_ref::<Vec<MjValue>>().is_some()
                        || o.downcast_ref::<indexmap::IndexMap<MjValue, MjValue>>()
                            .is_some())
            });
            if !plain {
                return false;
            }
            let Ok(iter) = value.try_iter() else {
                return false;
            };
            if value.kind() == ValueKind::Seq {
                iter.into_iter().any(|v| holds_undefined(&v))
            } else {
                iter.into_iter()
                    .any(|k| value.get_item(&k).is_ok_and(|v| holds_undefined(&v)))
            }
        }
        _ => false,
    }
}
