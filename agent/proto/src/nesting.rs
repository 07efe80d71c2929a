//! A cap on how deeply the recursive messages (`Batch` in a `Batch`, a fact list in a fact
//! list) nest when decoded. bincode recurses once per level and has no limit of its own, so
//! a frame of a few kilobytes that inflates to a million nested `Batch`es would overflow
//! the reader's stack and abort the whole controller (or agent), not fail one host.

use std::cell::Cell;

use serde::de::{Deserialize, Deserializer, Error};

/// Far above what either side sends (a loop's `Batch`, facts a handful of levels deep),
/// far below what a 2 MiB thread stack holds in a debug build.
pub const MAX_NESTING: usize = 64;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// One level of nesting for as long as it lives; leaving it (on success or error) pops it.
struct Level;

impl Level {
    fn enter<E: Error>() -> Result<Level, E> {
        DEPTH.with(|depth| {
            if depth.get() >= MAX_NESTING {
                return Err(E::custom(format_args!(
                    "message nests deeper than {MAX_NESTING} levels"
                )));
            }
            depth.set(depth.get() + 1);
            Ok(Level)
        })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// `deserialize_with` for a recursive field: decodes it one level deeper, or refuses.
/// The wire format is unchanged: it decodes exactly what the derived code would.
pub(crate) fn nested<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let _level = Level::enter::<D::Error>()?;
    T::deserialize(deserializer)
}
